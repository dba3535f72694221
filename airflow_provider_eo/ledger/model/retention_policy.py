"""What ``eo-ledger prune`` is asked (:class:`PrunePolicy`) and answers per pipeline
(:class:`PruneCount`), as values; the deleting is the store's (``ledger/store/retention.py``),
behind :class:`~.ledger_roles.LedgerAdministration`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class PrunePolicy:
    """Which settled epochs are old enough to delete: every given criterion must hold.

    ``older_than_days``: settled (``committed_at`` / ``aborted_at``) more than that many
    days ago. ``keep_last``: not among the pipeline's ``keep_last`` newest settled epochs
    (by epoch id). Raises ``ValueError`` when neither is given or one is out of range.
    """

    older_than_days: int | None = None
    keep_last: int | None = None

    def __post_init__(self) -> None:
        if self.older_than_days is None and self.keep_last is None:
            raise ValueError("prune needs --older-than-days N or --keep-last N (or both)")
        if self.older_than_days is not None and self.older_than_days < 0:
            raise ValueError(f"--older-than-days must be >= 0, not {self.older_than_days}")
        if self.keep_last is not None and self.keep_last < 1:
            raise ValueError(f"--keep-last must be >= 1, not {self.keep_last}")


@dataclass(frozen=True)
class PruneCount:
    """What a prune of one pipeline deletes (a dry run: would delete).

    ``epochs`` / ``ranges`` / ``transitions`` (history rows) / ``lag_samples`` / ``audits``
    (kept audits none of whose epochs is left) / ``audit_findings`` (theirs): rows deleted;
    ``oldest_epoch_id`` / ``newest_epoch_id``: the span of deleted ids (None when nothing);
    ``kept_referenced``: matching epochs kept because a gap or dead letter names them;
    ``batches``: delete transactions run.
    """

    pipeline: str
    epochs: int
    ranges: int
    oldest_epoch_id: int | None
    newest_epoch_id: int | None
    kept_referenced: int
    batches: int = 0
    transitions: int = 0
    lag_samples: int = 0
    audits: int = 0
    audit_findings: int = 0

    def to_json(self) -> dict[str, Any]:
        """Every field, by name."""
        return asdict(self)
