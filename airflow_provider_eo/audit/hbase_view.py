"""What HBase holds for a batch of audited rows, as values (no I/O), and what to read.

Thrift1 answers one version per column, so the audit reads, per batch of segments, the
rows' newest cells (``latest``) and, per distinct expected version ``v``, the newest cells
at or below ``v`` (``at[v]``: a time-range read ``[0, v + 1)``, the version HBase would
show a reader of that moment). A batch needs one batched call per distinct version, like
the writer's one ``mutateRowsTs`` per segment: never one call per cell.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from airflow_provider_eo.audit.expected_writes import ExpectedSegment

#: column -> (value, version): one row as a read answered it.
RowCells = Mapping[bytes, tuple[bytes, int]]


@dataclass(frozen=True)
class RowsView:
    """``latest``: row -> its newest cells; ``at``: version -> row -> newest cells ``<= version``.
    A row absent from a mapping holds no cell there."""

    latest: Mapping[bytes, RowCells] = field(default_factory=dict)
    at: Mapping[int, Mapping[bytes, RowCells]] = field(default_factory=dict)

    def newest(self, row: bytes, column: bytes) -> tuple[bytes, int] | None:
        """The row's newest cell of ``column``, or None."""
        return self.latest.get(row, {}).get(column)

    def at_or_below(self, version: int, row: bytes) -> RowCells:
        """The row's newest cells at or below ``version`` (it must have been read)."""
        return self.at.get(version, {}).get(row, {})

    def observed(self) -> Iterable[tuple[bytes, bytes, bytes, int]]:
        """Every distinct ``(row, column, value, version)`` any read of the batch showed."""
        seen: set[tuple[bytes, bytes, int]] = set()
        for rows in (self.latest, *self.at.values()):
            for row, cells in rows.items():
                for column, (value, version) in cells.items():
                    if (row, column, version) not in seen:
                        seen.add((row, column, version))
                        yield row, column, value, version


@dataclass(frozen=True)
class ReadPlan:
    """The reads of one batch: every row it touches, and the rows to read at each version."""

    rows: tuple[bytes, ...]
    at: Mapping[int, tuple[bytes, ...]]


def read_plan(segments: Iterable[ExpectedSegment]) -> ReadPlan:
    """The reads :mod:`.cell_check` needs for ``segments``: the newest cells of every row,
    and each row at each version an expected cell or delete of it has."""
    rows: dict[bytes, None] = {}
    at: dict[int, dict[bytes, None]] = {}
    for segment in segments:
        for row, version in [
            *((c.row, c.version) for c in segment.cells),
            *((d.row, d.version) for d in segment.deletes),
        ]:
            rows[row] = None
            at.setdefault(version, {})[row] = None
    return ReadPlan(tuple(rows), {version: tuple(found) for version, found in sorted(at.items())})
