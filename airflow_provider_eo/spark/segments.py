"""Cell versions: group one partition range's mutations into timestamped segments.

The rule (docs/ARCHITECTURE.md "Cell versions"):

* a segment is a run of at most ``batch_size`` contiguous records of one
  partition, in offset order; all of its mutations go to HBase in one
  ``mutateRowsTs`` call whose timestamp is the offset of the segment's last record;
* inside a segment records collapse in offset order: a later value of a cell
  replaces an earlier one; a row delete drops the row's pending puts and becomes
  a family delete at the segment timestamp; a put for a row that has a pending
  delete closes the segment first (the put starts the next segment), because at
  equal timestamps HBase lets the delete mask the put.

Hence a record at offset ``o`` gets a version ``>= o``, and a segment that does
not contain a later record ``o' > o`` ends before ``o'``: replays with any split
never move a visible cell backwards.

Records that produce no mutation (``None``: e.g. dead-lettered) still count as
segment members, so the segment boundaries only depend on offsets.
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
    """Streams ``(offset, mutation | None)`` in offset order into segments."""

    def __init__(self, batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.current: Segment | None = None
        self.last_offset: int | None = None

    def add(self, offset: int, mutation: RowMutation | None) -> list[Segment]:
        """Add one record; returns the segments this record completed (0 to 2)."""
        if self.last_offset is not None and offset <= self.last_offset:
            raise ValueError(f"offsets must increase: {offset} after {self.last_offset}")
        self.last_offset = offset
        done: list[Segment] = []
        if (
            self.current is not None
            and isinstance(mutation, RowPut)
            and mutation.cells
            and mutation.row in self.current.deletes
        ):
            done.append(self.current)
            self.current = None
        if self.current is None:
            self.current = Segment(first_offset=offset, last_offset=offset)
        segment = self.current
        segment.last_offset = offset
        segment.record_count += 1
        if isinstance(mutation, RowDelete):
            segment.puts.pop(mutation.row, None)
            families = segment.deletes.get(mutation.row, ())
            segment.deletes[mutation.row] = families + tuple(
                f for f in mutation.families if f not in families
            )
        elif isinstance(mutation, RowPut) and mutation.cells:
            segment.puts.setdefault(mutation.row, {}).update(mutation.cells)
        if segment.record_count >= self.batch_size:
            done.append(segment)
            self.current = None
        return done

    def finish(self) -> Segment | None:
        """The last, partial segment (None when there is none)."""
        segment, self.current = self.current, None
        return segment


def build_segments(items: Iterable[tuple[int, RowMutation | None]], batch_size: int) -> Iterator[Segment]:
    """Segments of ``items`` (offset-ordered) per the cell-version rule, streaming."""
    builder = SegmentBuilder(batch_size)
    for offset, mutation in items:
        yield from builder.add(offset, mutation)
    last = builder.finish()
    if last is not None:
        yield last
