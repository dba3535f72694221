"""Is there anything for the next stream reservation? The rule the wait step applies.

One rule, shared by :class:`~airflow_provider_eo.operators.wait.WaitForRecordsOperator`'s
first check and :class:`~airflow_provider_eo.triggers.records_available.RecordsAvailableTrigger`'s
polls: compare each listed partition's high watermark (read_committed, the last stable
offset) with the ledger's stream cursor. Nothing here reads or writes: the reads are
``ledger/protocol/position_reads.py``'s (``read_positions``), and pins
are the reservation transaction's alone (``stream_reservation.py``).

A run should go on to ``reserve`` (``PendingRecords.ready``) when any of these holds:

* a pinned partition has records past its cursor (``pending``: ``high - max(cursor, low)``);
* a listed partition is not pinned yet (``unpinned``): its pin depends on the moment the
  reservation first sees it (``latest``, ``timestamp``, group offsets), and the starting
  offset must be pinned at first sight so a ``latest`` policy never drops the records
  produced while a run waited; the reservation pins it (and skips if it has no data);
* a cursor lies outside ``[low, high]`` (``out_of_range``): retention deleted records past
  it, or the topic was recreated; the reservation must record the gap or raise
  ``DataLossError`` / ``CursorBeyondHighWatermark``, never be hidden behind a wait.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_eo.ledger.model.offsets import TopicPartition


@dataclass(frozen=True)
class PendingRecords:
    """What a stream reservation of ``pipeline`` would find now.

    ``pending``: records past the cursor of every listed pinned partition (zeros
    included); ``unpinned``: listed partitions without a pin, with their ``high - low``;
    ``out_of_range``: pinned partitions whose cursor is below the low or above the high
    watermark. All sorted by (topic, partition).
    """

    pipeline: str
    pending: Mapping[TopicPartition, int]
    unpinned: Mapping[TopicPartition, int]
    out_of_range: tuple[TopicPartition, ...]

    @property
    def total(self) -> int:
        """Records past the cursors of the pinned partitions."""
        return sum(self.pending.values())

    @property
    def ready(self) -> bool:
        """Whether the run should go on to ``reserve`` (module docstring)."""
        return self.total > 0 or bool(self.unpinned) or bool(self.out_of_range)

    def reason(self) -> str:
        """Why the run goes on, or that it waits, in words (for logs and skip messages)."""
        why = []
        if self.total:
            why.append(f"{self.total} record(s) past the cursors")
        if self.unpinned:
            why.append(f"{len(self.unpinned)} partition(s) to pin: {_names(self.unpinned)}")
        if self.out_of_range:
            why.append(f"cursor outside the watermarks: {_names(self.out_of_range)}")
        return "; ".join(why) or "no records past the cursors"

    def to_json(self) -> dict[str, Any]:
        """``{"pipeline", "pending", "partitions": [{topic, partition, pending}], "unpinned":
        [{topic, partition, records}], "out_of_range": [{topic, partition}]}`` (the XCom value)."""
        return {
            "pipeline": self.pipeline,
            "pending": self.total,
            "partitions": [{"topic": t, "partition": p, "pending": n} for (t, p), n in self.pending.items()],
            "unpinned": [{"topic": t, "partition": p, "records": n} for (t, p), n in self.unpinned.items()],
            "out_of_range": [{"topic": t, "partition": p} for t, p in self.out_of_range],
        }


def pending_records(
    pipeline: str,
    listed: Iterable[TopicPartition],
    cursors: Mapping[TopicPartition, int],
    watermarks: Mapping[TopicPartition, tuple[int, int]],
) -> PendingRecords:
    """The rule, without I/O: ``listed`` partitions (those the pipeline's topics or pattern
    match now), the ledger's ``cursors`` (pinned partitions only) and each listed
    partition's ``(low, high)`` watermarks. Pinned partitions no longer listed are ignored."""
    pending: dict[TopicPartition, int] = {}
    unpinned: dict[TopicPartition, int] = {}
    out_of_range: list[TopicPartition] = []
    for tp in sorted(set(listed)):
        low, high = watermarks[tp]
        cursor = cursors.get(tp)
        if cursor is None:
            unpinned[tp] = high - low
            continue
        if cursor < low or cursor > high:
            out_of_range.append(tp)
        pending[tp] = max(0, high - max(cursor, low))
    return PendingRecords(pipeline, pending, unpinned, tuple(out_of_range))


@dataclass(frozen=True)
class PipelinePositions:
    """What one check of ``pipeline`` read: the ``listed`` partitions, the ledger's
    ``cursors`` (pinned partitions) and each listed partition's ``(low, high)``
    ``watermarks``. The wait step's lag sample (``ledger/model/lag.py``) is made of the
    same reads."""

    pipeline: str
    listed: tuple[TopicPartition, ...]
    cursors: Mapping[TopicPartition, int]
    watermarks: Mapping[TopicPartition, tuple[int, int]]

    def pending(self) -> PendingRecords:
        """The rule (:func:`pending_records`) applied to these reads."""
        return pending_records(self.pipeline, self.listed, self.cursors, self.watermarks)


def _names(tps: Iterable[TopicPartition]) -> str:
    return ",".join(f"{t}[{p}]" for t, p in tps)
