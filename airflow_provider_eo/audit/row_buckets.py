"""The audit's memory bound: the window's rows split into buckets audited one pass each.

Contract. The window's index and candidates (:class:`~.range_audit.WindowState`) grow with
the distinct cells of the window; :class:`RowBuckets` bounds them by a byte budget
instead. A row belongs to bucket ``hash(row) mod count`` (:func:`bucket_of`, BLAKE2b,
stable across processes); a pass over the window maps every record (so the window's
lowest and highest versions stay window-wide) but indexes, reads from HBase and checks only
the cells and deletes of its bucket's rows, and is settled before the next pass. Every
check is about one row (a cell, its column's newer versions, its family's deletes), so the
passes together name exactly the findings one pass names. :func:`state_bytes` estimates a
state's bytes (set and dict entries, frozen parts' arrays, candidates with their bytes); a
range or a merged pass over ``budget`` raises :class:`IndexOverBudget`, and the audit starts
again with :func:`buckets_after` buckets (counted in the report's ``index`` section). The
Spark runner gives each task ``budget`` divided by the executor's task slots
(:meth:`RowBuckets.per_task`): the running tasks together hold at most one budget beside
the driver's merged state.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from airflow_provider_eo.audit.expected_writes import ExpectedSegment
from airflow_provider_eo.config.specs import DEFAULT_INDEX_BUDGET_BYTES

if TYPE_CHECKING:
    from airflow_provider_eo.audit.cell_check import CellCandidates
    from airflow_provider_eo.audit.window_index import WindowIndex

#: Default byte budget of the window's index and candidates (``--index-budget-bytes``).
INDEX_BUDGET_BYTES = DEFAULT_INDEX_BUDGET_BYTES
#: Most buckets a window is cut into (nor more than its offsets): beyond, a pass's rows
#: are not split further and its budget is no longer checked (the report shows the peak).
MAX_BUCKETS = 1 << 16
#: Estimated bytes of one older expected cell in the index's set (a 64-bit int and its slot).
CELL_ENTRY_BYTES = 64
#: Estimated bytes of one newest-version entry (two ints and a dict slot).
VERSION_ENTRY_BYTES = 104


class WindowState(Protocol):
    """What the budget measures of a window's state (``range_audit.WindowState``)."""

    @property
    def index(self) -> WindowIndex: ...

    @property
    def candidates(self) -> CellCandidates: ...


@dataclass(frozen=True)
class RowBuckets:
    """Which bucket a pass audits (``index`` of ``count``) and the byte budget (0: none)."""

    index: int = 0
    count: int = 1
    budget: int = INDEX_BUDGET_BYTES

    def part_of(self, segment: ExpectedSegment) -> ExpectedSegment:
        """``segment``'s cells and deletes whose rows are in this bucket (itself for one bucket)."""
        if self.count == 1:
            return segment
        cells = tuple(c for c in segment.cells if bucket_of(c.row, self.count) == self.index)
        deletes = tuple(d for d in segment.deletes if bucket_of(d.row, self.count) == self.index)
        return replace(segment, cells=cells, deletes=deletes)

    def per_task(self, slots: int) -> RowBuckets:
        """These buckets with the budget of one of ``slots`` tasks running at once (at least
        1 byte; no budget stays none)."""
        if not self.budget or slots <= 1:
            return self
        return replace(self, budget=max(1, self.budget // slots))

    def check(self, state: WindowState, offsets_done: int) -> None:
        """Raise :class:`IndexOverBudget` when ``state`` is over the budget."""
        used = state_bytes(state)
        if self.budget and used > self.budget:
            raise IndexOverBudget(used, offsets_done)


#: One bucket, the default budget: a window's first pass.
ONE_BUCKET = RowBuckets()


class IndexOverBudget(Exception):
    """A pass's state went over the budget after ``offsets_done`` offsets of the window."""

    def __init__(self, used: int, offsets_done: int) -> None:
        super().__init__(used, offsets_done)  # its args rebuild it: a Spark task's result pickles
        self.used = used
        self.offsets_done = offsets_done

    def __str__(self) -> str:
        return f"audit index at {self.used} bytes after {self.offsets_done} offsets"


def bucket_of(row: bytes, count: int) -> int:
    """The bucket of ``row`` among ``count``."""
    return int.from_bytes(hashlib.blake2b(row, digest_size=8).digest(), "big") % count


def state_bytes(state: WindowState) -> int:
    """Estimated bytes of a window state's index (its loose entries and frozen parts)
    and candidates."""
    index = state.index
    entries = len(index.newest_put) + len(index.newest_delete)
    loose = len(index.older) * CELL_ENTRY_BYTES + entries * VERSION_ENTRY_BYTES
    return loose + sum(part.nbytes for part in index.parts) + state.candidates.bytes


def buckets_after(count: int, over: IndexOverBudget, window_offsets: int, budget: int) -> int:
    """The bucket count to start again with: the bucket's bytes projected over the whole
    window, a quarter of headroom, at least twice ``count``; at most :data:`MAX_BUCKETS`
    and the window's offsets."""
    share = max(over.offsets_done, 1) / max(window_offsets, 1)
    projected = over.used / min(share, 1.0)
    wanted = max(2 * count, math.ceil(count * projected * 1.25 / max(budget, 1)))
    return min(wanted, bucket_limit(window_offsets))


def bucket_limit(window_offsets: int) -> int:
    """The most buckets a window of ``window_offsets`` offsets is cut into."""
    return max(1, min(window_offsets, MAX_BUCKETS))
