"""Cells: does HBase hold every expected cell and delete, and nothing else? (no I/O)

Contract. :func:`check_batch` compares a batch of expected segments with what HBase showed
(:class:`~.hbase_view.RowsView`) and adds the batch to the window's :class:`WindowIndex`:

* an expected cell present at its version with its bytes is verified; at its version
  with other bytes, a ``cell_bytes_differ`` finding; absent at its version but with a newer
  version of the column visible, covered by that newer version (which, when a committed
  record of the window wrote it, is checked as an expected cell of its own); absent without
  a newer one, a candidate, settled by :func:`settle` once the whole window is indexed (a
  later delete of its family, or a later expected cell of its column, covers it; else
  ``cell_missing``);
* an expected family delete at version ``d``: the row must show no cell of the family at
  or below ``d``; each one shown is a ``delete_not_applied`` finding;
* every other cell a read showed whose ``(row, column, version)`` is not expected (a cell
  a delete did not hide is named once, as that) is a candidate
  for :func:`settle`: ``unexpected_cell`` when its version lies inside the window
  (``in_window``), "later data" above it, ignored below it (older data).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from airflow_provider_eo.audit.expected_writes import ExpectedCell, ExpectedSegment
from airflow_provider_eo.audit.findings import Finding, FindingKind, shown
from airflow_provider_eo.audit.hbase_view import RowsView
from airflow_provider_eo.audit.window_index import WindowIndex

#: Estimated bytes of one candidate beside its row, column and value bytes (the index budget's
#: measure, ``row_buckets``).
CANDIDATE_BYTES = 360

#: True inside the window's versions, False outside, None when only :func:`settle` knows.
InWindow = Callable[[int], bool | None]


@dataclass(frozen=True)
class RangeRef:
    """Where a batch comes from: the epoch and the partition of its range."""

    epoch_id: int
    topic: str
    partition: int


@dataclass(frozen=True)
class Absent:
    """An expected cell HBase did not show, nor anything newer of its column."""

    ref: RangeRef
    cell: ExpectedCell
    held: str


@dataclass(frozen=True)
class Observed:
    """A cell HBase showed that no committed record of the window had written so far."""

    ref: RangeRef
    row: bytes
    column: bytes
    value: bytes
    version: int


@dataclass
class CellTally:
    """What the cell checks counted (findings aside)."""

    verified: int = 0
    covered_by_newer: int = 0
    deletes_verified: int = 0
    later_data: int = 0


@dataclass
class CellCandidates:
    """What only the whole window can settle (:func:`settle`)."""

    absent: list[Absent] = field(default_factory=list)
    observed: list[Observed] = field(default_factory=list)
    #: Estimated bytes of the candidates (:func:`~.row_buckets.state_bytes`).
    bytes: int = 0

    def add_absent(self, absent: Absent) -> None:
        """Keep an absent expected cell."""
        self.absent.append(absent)
        cell = absent.cell
        self.bytes += CANDIDATE_BYTES + len(cell.row) + len(cell.column) + len(cell.value)

    def add_observed(self, observed: Observed) -> None:
        """Keep a cell no expected write explains so far."""
        self.observed.append(observed)
        self.bytes += CANDIDATE_BYTES + len(observed.row) + len(observed.column) + len(observed.value)


def check_batch(
    ref: RangeRef,
    segments: Iterable[ExpectedSegment],
    view: RowsView,
    index: WindowIndex,
    in_window: InWindow,
    tally: CellTally,
    candidates: CellCandidates,
) -> list[Finding]:
    """Check one batch (see the module contract); returns its final findings."""
    segments = list(segments)
    for segment in segments:
        index.add(segment)
    findings: list[Finding] = []
    # cells HBase showed that a check below already accounts for: an expected cell found at
    # its version (expected: no index lookup needed), a cell a delete did not hide (named once)
    explained: set[tuple[bytes, bytes, int]] = set()
    for segment in segments:
        for cell in segment.cells:
            found = _check_cell(ref, cell, view, tally, candidates, explained)
            if found is not None:
                findings.append(found)
        for delete in segment.deletes:
            shown_cells = [
                (column, held)
                for column, held in view.at_or_below(delete.version, delete.row).items()
                if column.split(b":", 1)[0] == delete.family
            ]
            tally.deletes_verified += not shown_cells
            explained.update((delete.row, column, held[1]) for column, held in shown_cells)
            findings += [
                Finding(
                    FindingKind.DELETE_NOT_APPLIED,
                    f"the tombstone's family delete at version {delete.version} does not hide this cell",
                    ref.epoch_id,
                    ref.topic,
                    ref.partition,
                    delete.offset,
                    delete.row,
                    column,
                    delete.version,
                    None,
                    _held(held),
                )
                for column, held in shown_cells
            ]
    for row, column, value, version in view.observed():
        if (row, column, version) in explained:
            continue
        if not index.expects(row, column, version) and in_window(version) is not False:
            candidates.add_observed(Observed(ref, row, column, value, version))
    return findings


def _check_cell(
    ref: RangeRef,
    cell: ExpectedCell,
    view: RowsView,
    tally: CellTally,
    candidates: CellCandidates,
    explained: set[tuple[bytes, bytes, int]],
) -> Finding | None:
    held = view.at_or_below(cell.version, cell.row).get(cell.column)
    if held is not None and held[1] == cell.version:
        explained.add((cell.row, cell.column, cell.version))  # an expected cell, whatever its bytes
        if held[0] == cell.value:
            tally.verified += 1
            return None
        return Finding(
            FindingKind.CELL_BYTES_DIFFER,
            "HBase holds other bytes at the expected version",
            ref.epoch_id,
            ref.topic,
            ref.partition,
            cell.offset,
            cell.row,
            cell.column,
            cell.version,
            cell.value,
            _held(held),
        )
    newest = view.newest(cell.row, cell.column)
    if newest is not None and newest[1] > cell.version:
        tally.covered_by_newer += 1
        return None
    candidates.add_absent(Absent(ref, cell, "nothing" if held is None else _held(held)))
    return None


def _held(cell: tuple[bytes, int]) -> str:
    return f"{shown(cell[0])!r} at version {cell[1]}"


def settle(
    index: WindowIndex, in_window: InWindow, tally: CellTally, candidates: CellCandidates
) -> list[Finding]:
    """The window's last cell findings: candidates no later write of the window explains."""
    findings = [
        Finding(
            FindingKind.CELL_MISSING,
            "no cell at the expected version, nothing newer, no later delete",
            a.ref.epoch_id,
            a.ref.topic,
            a.ref.partition,
            a.cell.offset,
            a.cell.row,
            a.cell.column,
            a.cell.version,
            a.cell.value,
            a.held,
        )
        for a in candidates.absent
        if not index.covers(a.cell)
    ]
    tally.covered_by_newer += len(candidates.absent) - len(findings)
    reported: set[tuple[bytes, bytes, int]] = set()
    for o in candidates.observed:
        if index.expects(o.row, o.column, o.version) or (o.row, o.column, o.version) in reported:
            continue
        reported.add((o.row, o.column, o.version))
        inside = in_window(o.version)
        if inside is None:
            if index.highest is not None and o.version > index.highest:
                tally.later_data += 1
                continue
            inside = index.lowest is not None and o.version >= index.lowest
        if inside:
            findings.append(
                Finding(
                    FindingKind.UNEXPECTED_CELL,
                    "no committed record of the window maps to this cell",
                    o.ref.epoch_id,
                    o.ref.topic,
                    o.ref.partition,
                    None,
                    o.row,
                    o.column,
                    None,
                    None,
                    f"{shown(o.value)!r} at version {o.version}",
                )
            )
    return findings
