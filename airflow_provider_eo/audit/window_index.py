"""The window's index of expected writes: what settles a cell check (no I/O).

Contract of :class:`WindowIndex`: every expected cell of the window as a 64-bit key of
``(row, column, version)`` (:func:`versioned_key` of :func:`cell_key`, stable across
processes, so indexes built apart can be merged), the newest expected version per column
and per family delete, and the lowest and highest expected versions; its memory grows with
the window's distinct cells (a few dozen bytes each), never with their values.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

from airflow_provider_eo.audit.expected_writes import ExpectedCell, ExpectedSegment

_LENGTHS = struct.Struct(">II")
_SPREAD = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


@dataclass
class WindowIndex:
    """Every expected cell and delete of the window so far, as 64-bit hashes."""

    cells: set[int] = field(default_factory=set)
    newest_put: dict[int, int] = field(default_factory=dict)  # cell_key(row, column) -> version
    newest_delete: dict[int, int] = field(default_factory=dict)  # cell_key(row, family) -> version
    lowest: int | None = None
    highest: int | None = None

    def add(self, segment: ExpectedSegment) -> None:
        """Index ``segment``'s cells and deletes."""
        for cell in segment.cells:
            column_key = cell_key(cell.row, cell.column)
            self.cells.add(versioned_key(column_key, cell.version))
            _keep_max(self.newest_put, column_key, cell.version)
            self._span(cell.version)
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

    def merge(self, other: WindowIndex) -> None:
        """Add ``other``'s writes (an index built apart, e.g. by another Spark task)."""
        self.cells |= other.cells
        for key, version in other.newest_put.items():
            _keep_max(self.newest_put, key, version)
        for key, version in other.newest_delete.items():
            _keep_max(self.newest_delete, key, version)
        for bound in (other.lowest, other.highest):
            if bound is not None:
                self._span(bound)

    def expects(self, row: bytes, column: bytes, version: int) -> bool:
        """True when a committed record of the window wrote ``(row, column)`` at ``version``."""
        return versioned_key(cell_key(row, column), version) in self.cells

    def covers(self, cell: ExpectedCell) -> bool:
        """True when a later delete of the cell's family or a newer expected cell of its column hides it."""
        deleted = self.newest_delete.get(cell_key(cell.row, cell.family), -1) >= cell.version
        return deleted or self.newest_put.get(cell_key(cell.row, cell.column), -1) > cell.version

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
