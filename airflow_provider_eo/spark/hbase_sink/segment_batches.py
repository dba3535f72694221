"""A pack's small segments share HBase writes: consecutive segments grouped into one batch.

A pack of small ranges (``spark/task/task_pack.py``) cuts at least one segment per range, and
each segment used to cost at least one ``mutateRowsTs`` call of its own (1.6-5 ms against 400
calls for 400 ranges). A :class:`SegmentBatcher` groups the pack's consecutive segments into
a :class:`SegmentBatch`, written as one unit (``SegmentWriter.write_batch``). Contract:

* a batch holds consecutive segments in the order they were cut, at most ``batch_size``
  records and ``batch_bytes`` bytes of mutations together (the bounds of one segment): a
  segment that would take the batch past either bound closes the batch first, so a segment
  at a bound on its own (a big range's) goes alone, exactly as without batching; an empty
  segment (nothing to send) joins no batch;
* each segment keeps its own versions; Thrift1 has one timestamp per ``mutateRowsTs`` call,
  so :meth:`SegmentBatch.calls` merges the calls of equal timestamp (in segment order: a
  later segment's value of a cell replaces an earlier one's, as its later write would) and
  orders the calls by timestamp, ascending. The visible state is the one of writing the
  segments one by one: HBase resolves a cell by version, and at an equal version by write
  order (kept inside a merged call); a family delete masks the puts at or below its version
  whatever the order of arrival. A partition's later segments carry higher offset versions,
  so its cells never go out before an earlier segment's;
* each segment carries its owner (the range's label), so a failed batch names every range
  in it (:meth:`SegmentBatch.owners_text`): all of them failed.

The calls of a batch are many only when its segments' versions differ (partitions at
different offsets, field versions); the writer then sends them pipelined (all requests,
then all answers: ``thrift_calls.mutate_rows_ts_pipelined``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_provider_eo.spark.hbase_sink.segments import Segment, WriteCall

#: The most owners a batch's error or log line names (then their count).
NAMED_OWNERS = 10


@dataclass
class SegmentBatch:
    """Consecutive segments written together, each with the label of the range it belongs to."""

    segments: list[Segment] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)
    record_count: int = 0
    payload_bytes: int = 0

    def add(self, segment: Segment, owner: str) -> None:
        """Append one segment of range ``owner``."""
        self.segments.append(segment)
        self.owners.append(owner)
        self.record_count += segment.record_count
        self.payload_bytes += segment.payload_bytes

    def calls(self) -> list[WriteCall]:
        """The batch's ``mutateRowsTs`` calls: the segments' calls merged per timestamp (family
        deletes and puts in segment order, a later value of a cell replacing an earlier one),
        timestamps ascending (module contract)."""
        merged: dict[int, WriteCall] = {}
        for segment in self.segments:
            for call in segment.calls():
                held = merged.get(call.timestamp)
                if held is None:
                    merged[call.timestamp] = WriteCall(call.timestamp, dict(call.deletes), dict(call.puts))
                    continue
                for row, families in call.deletes.items():
                    have = held.deletes.get(row, ())
                    held.deletes[row] = have + tuple(f for f in families if f not in have)
                for row, cells in call.puts.items():
                    have_cells = held.puts.get(row)
                    held.puts[row] = dict(cells) if have_cells is None else {**have_cells, **cells}
        return [merged[timestamp] for timestamp in sorted(merged)]

    def owners_text(self) -> str:
        """The distinct owners in order, the first :data:`NAMED_OWNERS` named, then the count."""
        distinct = list(dict.fromkeys(self.owners))
        named = ", ".join(distinct[:NAMED_OWNERS])
        rest = len(distinct) - NAMED_OWNERS
        return named if rest <= 0 else f"{named} and {rest} more"


class SegmentBatcher:
    """Groups segments into batches (module contract); ``batch_bytes`` None: no byte bound."""

    def __init__(self, batch_size: int, batch_bytes: int | None = None) -> None:
        self.batch_size = batch_size
        self.batch_bytes = batch_bytes
        self.current: SegmentBatch | None = None

    def _fits(self, batch: SegmentBatch, segment: Segment) -> bool:
        if batch.record_count + segment.record_count > self.batch_size:
            return False
        return self.batch_bytes is None or batch.payload_bytes + segment.payload_bytes <= self.batch_bytes

    def add(self, segment: Segment, owner: str) -> list[SegmentBatch]:
        """Add the next segment; returns the batches it completed (0 to 2)."""
        if segment.is_empty():
            return []
        done = []
        if self.current is not None and not self._fits(self.current, segment):
            done.append(self.current)
            self.current = None
        if self.current is None:
            self.current = SegmentBatch()
        self.current.add(segment, owner)
        batch = self.current
        if batch.record_count >= self.batch_size or (
            self.batch_bytes is not None and batch.payload_bytes >= self.batch_bytes
        ):
            done.append(batch)
            self.current = None
        return done

    def finish(self) -> SegmentBatch | None:
        """The last, partial batch (None when there is none)."""
        batch, self.current = self.current, None
        return batch
