"""The ledger's read model as values: what the ``eo-ledger`` CLI and the Epochs UI ask for
(:class:`EpochFilter`) and get back (:class:`PipelineOverview` with its :class:`OpenEpoch`
and :class:`Gap` items). The reads themselves are the store's (``ledger/store/queries.py``,
``ledger/store/epoch_rows.py``), behind :class:`~.ledger_roles.LedgerReads`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState


@dataclass(frozen=True)
class EpochFilter:
    """Which epochs to read: every field given must match (None matches anything).

    ``states`` and ``pipelines`` match any of their members (an empty set matches
    nothing); ``min_id`` / ``max_id`` are inclusive; ``committed_since`` (timezone-aware)
    matches epochs committed at or after it (never an uncommitted one). With ``limit``, only the ``limit``
    newest matching epochs. Answers are oldest first either way.
    """

    pipeline: str | None = None
    pipelines: frozenset[str] | None = None
    states: frozenset[EpochState] | None = None
    kind: EpochKind | None = None
    dag_id: str | None = None
    run_id: str | None = None
    min_id: int | None = None
    max_id: int | None = None
    committed_since: datetime | None = None
    limit: int | None = None

    @property
    def state(self) -> EpochState | None:
        """The one state asked for, when ``states`` names exactly one (else None)."""
        return next(iter(self.states)) if self.states is not None and len(self.states) == 1 else None


@dataclass(frozen=True)
class OpenEpoch:
    """A RESERVED or WRITTEN epoch, as the pipeline overview names it."""

    epoch_id: int
    kind: EpochKind
    state: EpochState
    run_id: str

    def to_json(self) -> dict[str, Any]:
        """``{"epoch_id", "kind", "state", "run_id"}``."""
        return {
            "epoch_id": self.epoch_id,
            "kind": self.kind.value,
            "state": self.state.value,
            "run_id": self.run_id,
        }


@dataclass(frozen=True)
class Gap:
    """Offsets ``[start, end)`` lost to retention and skipped (``on_data_loss: record_gap``)."""

    topic: str
    partition: int
    start: int
    end: int
    epoch_id: int | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        """``{"topic", "partition", "start", "end", "epoch_id", "reason"}``."""
        return asdict(self)


@dataclass(frozen=True)
class PipelineOverview:
    """One pipeline at a glance: ``epoch_counts`` has every state (zero included), open
    epochs and gaps are ordered (by id; by topic, partition, start), ``cursors`` is the
    next stream offset per pinned partition."""

    name: str
    epoch_counts: Mapping[EpochState, int]
    open_epochs: tuple[OpenEpoch, ...]
    cursors: Mapping[TopicPartition, int]
    dead_letters: int
    gaps: tuple[Gap, ...]

    def to_json(self) -> dict[str, Any]:
        """The item of ``eo-ledger pipelines`` / ``GET /api/pipelines`` (cursors sorted)."""
        return {
            "name": self.name,
            "epochs": {state.value: self.epoch_counts[state] for state in EpochState},
            "open_epochs": [epoch.to_json() for epoch in self.open_epochs],
            "cursors": [
                {"topic": topic, "partition": partition, "cursor": cursor}
                for (topic, partition), cursor in sorted(self.cursors.items())
            ],
            "dead_letters": self.dead_letters,
            "gaps": [gap.to_json() for gap in self.gaps],
        }
