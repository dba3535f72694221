"""Cell versions: group one partition range's mutations into timestamped segments.

The rule (docs/ARCHITECTURE.md "Cell versions"):

* a segment is a run of contiguous records of one partition, in offset order; all of
  its mutations go to HBase in one ``mutateRowsTs`` call whose timestamp is the offset
  of the segment's last record;
* a segment holds at most ``batch_size`` records and at most ``batch_bytes`` bytes of
  mutations (each mutation weighs its ``size_bytes``, counted as added, before
  collapsing): a record whose mutation would take the segment past ``batch_bytes``
  closes the segment first, so a record heavier than ``batch_bytes`` goes alone;
* inside a segment records collapse in offset order: a later value of a cell
  replaces an earlier one; a row delete drops the row's pending puts and becomes
  a family delete at the segment timestamp; a put for a row that has a pending
  delete closes the segment first (the put starts the next segment), because at
  equal timestamps HBase lets the delete mask the put.

Hence a record at offset ``o`` gets a version ``>= o``, and a segment that does
not contain a later record ``o' > o`` ends before ``o'``: replays with any split
never move a visible cell backwards.

Records that produce no mutation (``None``: e.g. dead-lettered) still count as
segment members and weigh nothing, so the boundaries are a pure function of the
offsets and the mutations: a replay of the same range with the same mapping and
settings writes the same segments at the same versions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from airflow_provider_eo.spark.records import RowDelete, RowMutation, RowPut


@dataclass
class Segment:
    """Collapsed mutations of records ``[first_offset, last_offset]``; version ``timestamp``."""

    first_offset: int
    last_offset: int
    record_count: int = 0
    #: Bytes of the mutations added (before collapsing): what bounds the Thrift call.
    payload_bytes: int = 0
    puts: dict[bytes, dict[bytes, bytes]] = field(default_factory=dict)
    deletes: dict[bytes, tuple[bytes, ...]] = field(default_factory=dict)

    @property
    def timestamp(self) -> int:
        """HBase version of every mutation in this segment: the last record's offset."""
        return self.last_offset

    @property
    def cell_count(self) -> int:
        """Number of cells the segment puts (after collapsing)."""
        return sum(len(cells) for cells in self.puts.values())

    def is_empty(self) -> bool:
        """True when there is nothing to send to HBase."""
        return not self.puts and not self.deletes


class SegmentBuilder:
    """Streams ``(offset, mutation | None)`` in offset order into segments.

    ``batch_bytes`` None means no byte bound (only ``batch_size`` closes a segment).
    Raises ValueError for a bound below 1.
    """

    def __init__(self, batch_size: int, batch_bytes: int | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if batch_bytes is not None and batch_bytes < 1:
            raise ValueError(f"batch_bytes must be >= 1, got {batch_bytes}")
        self.batch_size = batch_size
        self.batch_bytes = batch_bytes
        self.current: Segment | None = None
        self.last_offset: int | None = None

    def add(self, offset: int, mutation: RowMutation | None) -> list[Segment]:
        """Add one record; returns the segments this record completed (0 to 2)."""
        if self.last_offset is not None and offset <= self.last_offset:
            raise ValueError(f"offsets must increase: {offset} after {self.last_offset}")
        self.last_offset = offset
        done: list[Segment] = []
        weight = 0 if mutation is None else mutation.size_bytes
        if self.current is not None and (
            self._overflows(self.current, weight)
            or (isinstance(mutation, RowPut) and mutation.cells and mutation.row in self.current.deletes)
        ):
            done.append(self.current)
            self.current = None
        if self.current is None:
            self.current = Segment(first_offset=offset, last_offset=offset)
        segment = self.current
        segment.last_offset = offset
        segment.record_count += 1
        segment.payload_bytes += weight
        if isinstance(mutation, RowDelete):
            segment.puts.pop(mutation.row, None)
            families = segment.deletes.get(mutation.row, ())
            segment.deletes[mutation.row] = families + tuple(
                f for f in mutation.families if f not in families
            )
        elif isinstance(mutation, RowPut) and mutation.cells:
            segment.puts.setdefault(mutation.row, {}).update(mutation.cells)
        if segment.record_count >= self.batch_size or self._full(segment):
            done.append(segment)
            self.current = None
        return done

    def _overflows(self, segment: Segment, weight: int) -> bool:
        """True when ``weight`` more bytes would take the segment past ``batch_bytes``
        (the record then starts the next segment; a record weighing nothing never does)."""
        bound = self.batch_bytes
        return bound is not None and weight > 0 and segment.payload_bytes + weight > bound

    def _full(self, segment: Segment) -> bool:
        return self.batch_bytes is not None and segment.payload_bytes >= self.batch_bytes

    def finish(self) -> Segment | None:
        """The last, partial segment (None when there is none)."""
        segment, self.current = self.current, None
        return segment


def build_segments(
    items: Iterable[tuple[int, RowMutation | None]], batch_size: int, batch_bytes: int | None = None
) -> Iterator[Segment]:
    """Segments of ``items`` (offset-ordered) per the cell-version rule, streaming."""
    builder = SegmentBuilder(batch_size, batch_bytes)
    for offset, mutation in items:
        yield from builder.add(offset, mutation)
    last = builder.finish()
    if last is not None:
        yield last
