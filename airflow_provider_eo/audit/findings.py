"""What an audit found: :class:`Finding` values and the bounded :class:`FindingLog`.

Contract: a finding names where it is (topic, partition, offset; row, column), what the
committed records say should be there (version, bytes shortened to :data:`SHOWN_BYTES`)
and what HBase or the ledger holds instead. :class:`FindingLog` keeps at most ``limit``
findings (:data:`MAX_FINDINGS` by default) and counts every one, kept or not, per kind.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

#: Findings one audit keeps in full; the rest are only counted.
MAX_FINDINGS = 1000
#: Bytes of a value a finding shows (then ``...`` and the length).
SHOWN_BYTES = 40


class FindingKind(StrEnum):
    """Every discrepancy the audit names (docs/audit.md says what to do about each)."""

    VOTE_COUNTS_DO_NOT_ADD_UP = "vote_counts_do_not_add_up"
    VOTE_COUNTS_DIFFER = "vote_counts_differ"
    RECORD_UNMAPPABLE = "record_unmappable"
    CELL_MISSING = "cell_missing"
    CELL_BYTES_DIFFER = "cell_bytes_differ"
    DELETE_NOT_APPLIED = "delete_not_applied"
    UNEXPECTED_CELL = "unexpected_cell"
    DEAD_LETTER_MISSING = "dead_letter_missing"
    DEAD_LETTER_EXTRA = "dead_letter_extra"
    DEAD_LETTER_TOPIC_MISSING = "dead_letter_topic_missing"
    DEAD_LETTER_TOPIC_DUPLICATE = "dead_letter_topic_duplicate"
    DEAD_LETTER_TOPIC_RECORD_DIFFERS = "dead_letter_topic_record_differs"
    DEAD_LETTER_TOPIC_UNEXPECTED = "dead_letter_topic_unexpected"
    DEAD_LETTER_TOPIC_UNREADABLE = "dead_letter_topic_unreadable"
    GROUP_BEHIND = "group_behind"
    GROUP_UNREADABLE = "group_unreadable"
    RANGE_UNREADABLE = "range_unreadable"
    RANGE_FAILED = "range_failed"


def shown(value: bytes | None) -> str | None:
    """``value`` for a human: text (backslash escapes for non-UTF-8), cut at :data:`SHOWN_BYTES`."""
    if value is None:
        return None
    text = value[:SHOWN_BYTES].decode("utf-8", "backslashreplace")
    return text if len(value) <= SHOWN_BYTES else f"{text}... ({len(value)} bytes)"


@dataclass(frozen=True)
class Finding:
    """One discrepancy; fields that do not apply are None."""

    kind: FindingKind
    detail: str
    epoch_id: int | None = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    row: bytes | None = None
    column: bytes | None = None
    expected_version: int | None = None
    expected_bytes: bytes | None = None
    held: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form: every field, bytes shown (:func:`shown`)."""
        return {
            "kind": self.kind.value,
            "detail": self.detail,
            "epoch_id": self.epoch_id,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "row": shown(self.row),
            "column": shown(self.column),
            "expected_version": self.expected_version,
            "expected_bytes": shown(self.expected_bytes),
            "hbase_holds": self.held,
        }

    def text(self) -> str:
        """One line for people."""
        where = [f"{self.topic}/{self.partition}@{self.offset}"] if self.topic is not None else []
        if self.row is not None:
            where.append(f"row {shown(self.row)!r}" + (f" {shown(self.column)!r}" if self.column else ""))
        if self.expected_version is not None:
            where.append(f"version {self.expected_version}")
        return f"{self.kind.value}: {' '.join(where)}: {self.detail}"


@dataclass
class FindingLog:
    """At most ``limit`` findings kept; ``counts`` has every one per kind."""

    limit: int = MAX_FINDINGS
    kept: list[Finding] = field(default_factory=list)
    counts: Counter[FindingKind] = field(default_factory=Counter)

    def add(self, finding: Finding) -> None:
        """Count ``finding``; keep it while fewer than ``limit`` are kept."""
        self.counts[finding.kind] += 1
        if len(self.kept) < self.limit:
            self.kept.append(finding)

    def extend(self, findings: list[Finding]) -> None:
        """:meth:`add` each of ``findings``."""
        for finding in findings:
            self.add(finding)

    @property
    def total(self) -> int:
        """Every finding, kept or only counted."""
        return sum(self.counts.values())

    @property
    def dropped(self) -> int:
        """Findings counted but not kept."""
        return self.total - len(self.kept)
