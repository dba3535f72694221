"""The window's index of expected writes: what settles a cell check (no I/O).

Contract of :class:`WindowIndex`: every expected cell of the window, keyed by 64-bit keys of
``(row, column)`` (:func:`cell_key`, stable across processes, so indexes built apart can be
merged): the newest expected version per column and per family delete, the older expected
versions of a column as :func:`versioned_key` keys, and the lowest and highest expected
versions. What is being added lives in dictionaries (a few dozen bytes per distinct cell);
:meth:`WindowIndex.freeze` moves it into a :class:`~.frozen_index.FrozenIndex` part (about
8 bytes per key and version), which is what a range's index is shipped and merged as; the
parts are compacted (:data:`MAX_PARTS`) so that a lookup searches a few of them. Its answers
never depend on how it is cut into parts.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

from airflow_provider_eo.audit.expected_writes import ExpectedCell, ExpectedSegment
from airflow_provider_eo.audit.frozen_index import FrozenIndex, merged

_LENGTHS = struct.Struct(">II")
_SPREAD = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1
#: Most frozen parts kept; beyond, the smallest :data:`COMPACT_PARTS` are merged into one.
MAX_PARTS = 16
COMPACT_PARTS = 8


@dataclass
class WindowIndex:
    """Every expected cell and delete of the window so far (see the module contract)."""

    newest_put: dict[int, int] = field(default_factory=dict)  # cell_key(row, column) -> version
    older: set[int] = field(default_factory=set)  # versioned_key of a column's older expected versions
    newest_delete: dict[int, int] = field(default_factory=dict)  # cell_key(row, family) -> version
    parts: list[FrozenIndex] = field(default_factory=list)
    lowest: int | None = None
    highest: int | None = None

    def add(self, segment: ExpectedSegment) -> None:
        """Index ``segment``'s cells and deletes."""
        newest = self.newest_put
        for cell in segment.cells:
            column_key = cell_key(cell.row, cell.column)
            version = cell.version
            held = newest.get(column_key)
            if held is None:
                newest[column_key] = version
            elif version > held:
                self.older.add(versioned_key(column_key, held))
                newest[column_key] = version
            elif version < held:
                self.older.add(versioned_key(column_key, version))
            self._span(version)
        for delete in segment.deletes:
            _keep_max(self.newest_delete, cell_key(delete.row, delete.family), delete.version)
            self._span(delete.version)

    def span_of(self, segment: ExpectedSegment) -> None:
        """Widen the lowest and highest versions by ``segment``'s, indexing nothing (a
        pass over one bucket of rows keeps the window's span)."""
        for cell in segment.cells:
            self._span(cell.version)
        for delete in segment.deletes:
            self._span(delete.version)

    @property
    def loose_entries(self) -> int:
        """Entries not frozen yet (dictionary and set entries)."""
        return len(self.newest_put) + len(self.older) + len(self.newest_delete)

    def freeze(self) -> None:
        """Move the entries added so far into a frozen part (same answers, fewer bytes)."""
        if self.loose_entries:
            self.parts.append(FrozenIndex.of(self.newest_put, self.older, self.newest_delete))
            self.newest_put, self.older, self.newest_delete = {}, set(), {}
            self._compact()

    def merge(self, other: WindowIndex) -> None:
        """Add ``other``'s writes (an index built apart, e.g. by another Spark task) as
        frozen parts; ``other`` is left as it was."""
        if other.loose_entries:
            self.parts.append(FrozenIndex.of(other.newest_put, other.older, other.newest_delete))
        self.parts.extend(other.parts)
        self._compact()
        for bound in (other.lowest, other.highest):
            if bound is not None:
                self._span(bound)

    def expects(self, row: bytes, column: bytes, version: int) -> bool:
        """True when a committed record of the window wrote ``(row, column)`` at ``version``."""
        column_key = cell_key(row, column)
        if self.newest_put.get(column_key) == version:
            return True
        versioned = versioned_key(column_key, version)
        if versioned in self.older:
            return True
        return any(p.newest_put(column_key) == version or p.has_older(versioned) for p in self.parts)

    def covers(self, cell: ExpectedCell) -> bool:
        """True when a later delete of the cell's family or a newer expected cell of its column hides it."""
        family_key = cell_key(cell.row, cell.family)
        deletes = [self.newest_delete.get(family_key), *(p.newest_delete(family_key) for p in self.parts)]
        if any(version is not None and version >= cell.version for version in deletes):
            return True
        column_key = cell_key(cell.row, cell.column)
        puts = [self.newest_put.get(column_key), *(p.newest_put(column_key) for p in self.parts)]
        return any(version is not None and version > cell.version for version in puts)

    def _compact(self) -> None:
        if len(self.parts) > MAX_PARTS:
            self.parts.sort(key=lambda part: part.entries, reverse=True)
            small = self.parts[-COMPACT_PARTS:]
            self.parts[-COMPACT_PARTS:] = [merged(small, versioned_key)]

    def _span(self, version: int) -> None:
        self.lowest = version if self.lowest is None else min(self.lowest, version)
        self.highest = version if self.highest is None else max(self.highest, version)


def cell_key(row: bytes, column: bytes) -> int:
    """A 64-bit key of ``(row, column)`` (BLAKE2b over the packed parts, lengths included)."""
    packed = _LENGTHS.pack(len(row), len(column)) + row + column
    return int.from_bytes(hashlib.blake2b(packed, digest_size=8).digest(), "big")


def versioned_key(column_key: int, version: int) -> int:
    """A 64-bit key of ``(row, column, version)`` from the column's :func:`cell_key`: the
    version spread by a 64-bit odd multiplier (SplitMix64's), XORed in; no second hash."""
    return column_key ^ ((version * _SPREAD) & _MASK)


def _keep_max(index: dict[int, int], key: int, version: int) -> None:
    if index.get(key, -1) < version:
        index[key] = version
