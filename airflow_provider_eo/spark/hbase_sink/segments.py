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

Records that produce no mutation (``None``) still count as segment members and weigh
nothing. A record that is not written at all (a dead letter, or a record outside a
replay's selection: :meth:`SegmentBuilder.skip`) closes the segment before it, so every
earlier record of the range is versioned below its offset and a later replay of it alone
(version >= its offset) is newer than all of them. The boundaries stay a pure function
of the offsets, the mutations and which records are skipped: a replay of the same range
with the same mapping and settings writes the same segments at the same versions.

Field versions (``mapping.version: field:<path>``: every put carries its own ``version``):

* segment boundaries and bounds are exactly as above (the version changes nothing there);
* inside a segment, per cell the value with the highest version wins; at equal versions
  the later offset wins. HBase resolves cells across segments and tasks the same way
  (highest version visible; at equal versions the later write), so the visible state
  does not depend on the split, the batch sizes or the order ranges are written in;
* Thrift1 has one timestamp per ``mutateRowsTs`` call, so a segment is written as one
  call per distinct version (:meth:`Segment.calls`, versions ascending);
* a range's mutations either all carry a version or none do: under field versions a
  delete carries its own version too (a Debezium delete event's log position, a tombstone's
  ``tombstone_version``) and is a family delete at that version, written in the call of its
  version (``versioned_deletes``: per row and family the highest version asked for; at an
  equal version HBase lets the delete mask the put). A family delete at an offset would not
  mask cells versioned by a field: a mix raises :class:`ValueError` naming the offset.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from airflow_provider_eo.spark.records import RowDelete, RowMutation, RowPut

#: The highest cell version HBase stores as given (``Long.MAX_VALUE`` means "the server's clock").
MAX_CELL_VERSION = 2**63 - 2

VersionSource = Literal["offset", "field"]


@dataclass(frozen=True)
class WriteCall:
    """One Thrift1 ``mutateRowsTs`` call: family ``deletes`` then ``puts``, all at ``timestamp``."""

    timestamp: int
    deletes: dict[bytes, tuple[bytes, ...]]
    puts: dict[bytes, dict[bytes, bytes]]


@dataclass
class Segment:
    """Collapsed mutations of records ``[first_offset, last_offset]``.

    ``puts`` and ``deletes`` are written at version ``timestamp``; ``versioned_puts`` holds
    ``row -> column -> (version, value)``, each cell written at its own version, and
    ``versioned_deletes`` ``row -> family -> version``, each family deleted at its own version.
    """

    first_offset: int
    last_offset: int
    record_count: int = 0
    #: Bytes of the mutations added (before collapsing): what bounds the Thrift call.
    payload_bytes: int = 0
    puts: dict[bytes, dict[bytes, bytes]] = field(default_factory=dict)
    deletes: dict[bytes, tuple[bytes, ...]] = field(default_factory=dict)
    versioned_puts: dict[bytes, dict[bytes, tuple[int, bytes]]] = field(default_factory=dict)
    versioned_deletes: dict[bytes, dict[bytes, int]] = field(default_factory=dict)

    @property
    def timestamp(self) -> int:
        """HBase version of the segment's offset-versioned mutations: the last record's offset."""
        return self.last_offset

    @property
    def cell_count(self) -> int:
        """Number of cells the segment puts (after collapsing)."""
        return sum(len(cells) for cells in self.puts.values()) + sum(
            len(cells) for cells in self.versioned_puts.values()
        )

    def is_empty(self) -> bool:
        """True when there is nothing to send to HBase."""
        return not self.puts and not self.deletes and not self.versioned_puts and not self.versioned_deletes

    def calls(self) -> list[WriteCall]:
        """The ``mutateRowsTs`` calls that write this segment, in order: the offset-versioned
        deletes and puts at ``timestamp`` (when there are any), then one call per distinct
        field version, ascending, its family deletes before its puts; rows and columns in
        first-seen order within a call."""
        calls = [WriteCall(self.timestamp, self.deletes, self.puts)] if self.puts or self.deletes else []
        deletes: dict[int, dict[bytes, tuple[bytes, ...]]] = {}
        for row, families in self.versioned_deletes.items():
            for family, version in families.items():
                at = deletes.setdefault(version, {})
                at[row] = (*at.get(row, ()), family)
        by_version: dict[int, dict[bytes, dict[bytes, bytes]]] = {}
        for row, cells in self.versioned_puts.items():
            for column, (version, value) in cells.items():
                by_version.setdefault(version, {}).setdefault(row, {})[column] = value
        calls += [
            WriteCall(version, deletes.get(version, {}), by_version.get(version, {}))
            for version in sorted(by_version.keys() | deletes.keys())
        ]
        return calls


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
        #: Where this range's versions come from, fixed by its first mutation.
        self.version_source: VersionSource | None = None

    def add(self, offset: int, mutation: RowMutation | None) -> list[Segment]:
        """Add one record; returns the segments this record completed (0 to 2).

        Raises ValueError when offsets do not increase, when a delete carries a version,
        when a version is out of HBase's range, or when puts with and without a version
        (or a delete and versioned puts) meet in one range.
        """
        if self.last_offset is not None and offset <= self.last_offset:
            raise ValueError(f"offsets must increase: {offset} after {self.last_offset}")
        if mutation is not None:
            if mutation.version is not None or self.version_source == "field":
                self._check_version(offset, mutation)
            elif self.version_source is None and (isinstance(mutation, RowDelete) or mutation.cells):
                self.version_source = "offset"
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
        if isinstance(mutation, RowDelete) and mutation.version is not None:
            held = segment.versioned_deletes.setdefault(mutation.row, {})
            for family in mutation.families:
                held[family] = max(held.get(family, -1), mutation.version)
        elif isinstance(mutation, RowDelete):
            segment.puts.pop(mutation.row, None)
            families = segment.deletes.get(mutation.row, ())
            segment.deletes[mutation.row] = families + tuple(
                f for f in mutation.families if f not in families
            )
        elif isinstance(mutation, RowPut) and mutation.cells:
            if mutation.version is None:
                segment.puts.setdefault(mutation.row, {}).update(mutation.cells)
            else:
                _collapse_versioned(segment, mutation.row, mutation.cells, mutation.version)
        if segment.record_count >= self.batch_size or self._full(segment):
            done.append(segment)
            self.current = None
        return done

    def skip(self, offset: int) -> list[Segment]:
        """A record at ``offset`` that is not written (a dead letter, or outside a replay's
        selection): returns the segment it closes (0 or 1); the next record starts a new one.
        Raises ValueError when offsets do not increase."""
        if self.last_offset is not None and offset <= self.last_offset:
            raise ValueError(f"offsets must increase: {offset} after {self.last_offset}")
        self.last_offset = offset
        done = [] if self.current is None else [self.current]
        self.current = None
        return done

    def _check_version(self, offset: int, mutation: RowMutation) -> None:
        """Enforce the version contract of the module docstring for one mutation."""
        version = mutation.version
        if isinstance(mutation, RowDelete) and version is None:
            raise ValueError(
                f"offset {offset}: a delete (tombstone) without a version after mutations with field "
                "versions in the same range: a family delete at an offset version cannot mask "
                "field-versioned cells"
            )
        if version is not None and (type(version) is not int or not 0 <= version <= MAX_CELL_VERSION):
            raise ValueError(
                f"offset {offset}: field version {version!r} is not an int in [0, {MAX_CELL_VERSION}]"
            )
        if isinstance(mutation, RowPut) and not mutation.cells:
            return
        source: VersionSource = "offset" if version is None else "field"
        if self.version_source is not None and source != self.version_source:
            has = "a field version" if version is not None else "no version"
            kind = "put" if isinstance(mutation, RowPut) else "delete"
            raise ValueError(
                f"offset {offset}: a {kind} with {has} "
                f"after mutations with {self.version_source} versions in the same range: one pipeline's "
                "versions come from one source"
            )
        self.version_source = source

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


def _collapse_versioned(segment: Segment, row: bytes, cells: dict[bytes, bytes], version: int) -> None:
    """Per cell, keep the value with the highest version (equal versions: this later one)."""
    held = segment.versioned_puts.setdefault(row, {})
    for column, value in cells.items():
        current = held.get(column)
        if current is None or version >= current[0]:
            held[column] = (version, value)


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
