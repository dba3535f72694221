"""Planning a replay of dead letters: which of a pipeline's dead letters a request selects,
and the backfill epochs (chunks) that write exactly them.

A replay is a backfill whose request names dead letters instead of a range
(:class:`ReplayFilter`: by the epoch that dead-lettered them, by an offset range of one
partition, by a substring of their error). Its chunks are ranges of
:class:`SelectedRange`: per partition ``[min offset, max offset + 1)`` of the chunk's
selected offsets, carrying those offsets; the reservation stores them in
``eo.replay_selections`` and the Spark write writes only them. Pure: the candidates come
from ``store.replay_rows.select_dead_letters`` (read by ``ledger/protocol/replay_reads.py``);
nothing here reads or writes, and nothing knows where a filter came from (the Trigger form,
the run conf, ``eo-ledger``: ``operators/backfill_request_form.py`` and
``cli/replay_commands.py`` build it).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_eo.ledger.model.epoch import PartitionRange
from airflow_provider_eo.ledger.model.offsets import TopicPartition

#: The fields of a :class:`ReplayFilter`, in the order reports list them.
FILTER_FIELDS = ("epoch", "topic", "partition", "from_offset", "to_offset", "reason")


@dataclass(frozen=True, order=True)
class SelectedRange(PartitionRange):
    """A replay chunk's range of one partition: ``[start, end)`` spans ``offsets`` (sorted,
    distinct, ``start == offsets[0]``, ``end == offsets[-1] + 1``), the only offsets written."""

    offsets: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        offsets = self.offsets
        if not offsets or offsets[0] != self.start or offsets[-1] + 1 != self.end:
            raise ValueError(
                f"replay range {self.topic}[{self.partition}] [{self.start}, {self.end}) must span its "
                f"selected offsets exactly"
            )
        if any(b <= a for a, b in itertools.pairwise(offsets)):
            raise ValueError(f"replay range {self.topic}[{self.partition}]: offsets must increase")

    def to_summary(self) -> dict[str, Any]:
        """:meth:`PartitionRange.to_summary` plus ``offsets`` (the chunk's XCom form)."""
        return {**super().to_summary(), "offsets": list(self.offsets)}


@dataclass(frozen=True)
class ReplayFilter:
    """Which unresolved dead letters of committed epochs a replay selects; every field
    given must match: ``epoch`` (the epoch that dead-lettered them), ``topic`` /
    ``partition`` / ``from_offset`` (inclusive) / ``to_offset`` (exclusive), ``reason``
    (a case-insensitive substring of the error)."""

    epoch: int | None = None
    topic: str | None = None
    partition: int | None = None
    from_offset: int | None = None
    to_offset: int | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        ranged = (self.partition, self.from_offset, self.to_offset)
        if self.topic is None and any(v is not None for v in ranged):
            raise ValueError("replay: a partition or offset range needs its topic")
        if self.from_offset is not None and self.to_offset is not None and self.to_offset <= self.from_offset:
            raise ValueError(
                f"replay: to_offset {self.to_offset} must be above from_offset {self.from_offset}"
            )
        if self.reason is not None and not self.reason.strip():
            raise ValueError("replay: reason must not be blank")

    def given(self) -> dict[str, Any]:
        """The fields given (not None), by name, in :data:`FILTER_FIELDS` order."""
        return {key: getattr(self, key) for key in FILTER_FIELDS if getattr(self, key) is not None}


@dataclass(frozen=True)
class Candidate:
    """A dead letter the filter matched: its record and, when already replayed, the
    epoch that resolved it."""

    topic: str
    partition: int
    offset: int
    epoch_id: int
    resolved_by_epoch: int | None = None


@dataclass(frozen=True)
class ReplayPlan:
    """The chunks (one backfill epoch each, ranges of :class:`SelectedRange`), the
    matched letters already resolved and by which epochs, and the selected offsets."""

    chunks: tuple[tuple[SelectedRange, ...], ...]
    selected: dict[TopicPartition, tuple[int, ...]]
    resolved_by: tuple[int, ...]
    already_resolved: int

    @property
    def record_count(self) -> int:
        """How many offsets the replay writes."""
        return sum(len(offsets) for offsets in self.selected.values())

    def refusal(self, pipeline: str, wanted: ReplayFilter) -> str | None:
        """Why there is nothing to replay (None: there is): every match already resolved
        (a no-op that names the resolving epochs), or nothing matched at all."""
        if self.chunks:
            return None
        if self.already_resolved:
            epochs = ", ".join(str(e) for e in self.resolved_by)
            return (
                f"pipeline {pipeline!r}: the {self.already_resolved} dead letter(s) matching "
                f"{wanted.given()} are already resolved by epoch(s) {epochs}, nothing to replay"
            )
        return f"pipeline {pipeline!r}: no dead letter of a committed epoch matches {wanted.given()}"


def plan_replay(candidates: Sequence[Candidate], max_records: int | None) -> ReplayPlan:
    """The unresolved ``candidates`` in (topic, partition, offset) order cut into chunks of
    at most ``max_records`` offsets (None: one chunk), each with one :class:`SelectedRange`
    per partition it touches. Deterministic: a cleared run plans the same chunks again."""
    if max_records is not None and max_records < 1:
        raise ValueError(f"max_records must be >= 1, got {max_records}")
    open_ = sorted((c.topic, c.partition, c.offset) for c in candidates if c.resolved_by_epoch is None)
    resolved = sorted({c.resolved_by_epoch for c in candidates if c.resolved_by_epoch is not None})
    size = max_records or max(len(open_), 1)
    chunks = tuple(_chunk(open_[i : i + size]) for i in range(0, len(open_), size))
    selected: dict[TopicPartition, list[int]] = {}
    for topic, partition, offset in open_:
        selected.setdefault((topic, partition), []).append(offset)
    return ReplayPlan(
        chunks=chunks,
        selected={tp: tuple(offsets) for tp, offsets in selected.items()},
        resolved_by=tuple(resolved),
        already_resolved=len(candidates) - len(open_),
    )


def _chunk(letters: Sequence[tuple[str, int, int]]) -> tuple[SelectedRange, ...]:
    by_tp: dict[TopicPartition, list[int]] = {}
    for topic, partition, offset in letters:
        by_tp.setdefault((topic, partition), []).append(offset)
    return tuple(
        SelectedRange(topic, partition, offsets[0], offsets[-1] + 1, tuple(offsets))
        for (topic, partition), offsets in sorted(by_tp.items())
    )


def selection_of(ranges: Sequence[PartitionRange]) -> dict[TopicPartition, tuple[int, ...]] | None:
    """The selected offsets of a chunk's ranges (None: a plain range backfill). A chunk is
    either all :class:`SelectedRange` or none: ``ValueError`` otherwise."""
    selected = [r for r in ranges if isinstance(r, SelectedRange)]
    if not selected:
        return None
    if len(selected) != len(ranges):
        raise ValueError("a replay chunk's ranges must all carry their selected offsets")
    return {r.tp: r.offsets for r in selected}
