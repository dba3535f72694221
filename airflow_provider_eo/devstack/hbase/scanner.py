"""Scanners: the row stream of ``scannerOpen*`` calls, paged by ``scannerGetList``.

A scanner walks the table's row keys in byte order (reverse when asked) with
keyset pagination; each page is read in one snapshot transaction, so every
row is returned consistently (HBase's row-level read isolation). Rows pass
through visibility (TTL, versions, time range), the column selection and the
filter; rows left without cells are skipped; ``batch`` (``scan_batching``)
splits a row into results of at most that many cells.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from airflow_provider_eo.devstack.hbase import errors, storage
from airflow_provider_eo.devstack.hbase.catalog import TableInfo
from airflow_provider_eo.devstack.hbase.filters import RowFilter
from airflow_provider_eo.devstack.hbase.model import LATEST_TIMESTAMP, Cell, ColumnSelection
from airflow_provider_eo.devstack.hbase.mutations import now_ms
from airflow_provider_eo.devstack.hbase.storage import Storage
from airflow_provider_eo.devstack.hbase.visibility import visible_cells

PAGE_ROWS = 500


@dataclass
class ScanSpec:
    """What a scanner returns (the fields of Thrift's ``TScan``)."""

    start: bytes = b""
    stop: bytes | None = None
    time_upper_bound: int = LATEST_TIMESTAMP
    selection: ColumnSelection | None = None
    row_filter: RowFilter | None = None
    batch: int | None = None
    sort_columns: bool = False
    reverse: bool = False


class Scanner:
    """One open scanner: an iterator over (row, cells) results."""

    def __init__(self, store: Storage, table: TableInfo, spec: ScanSpec) -> None:
        self.table = table
        self.spec = spec
        self._store = store
        self._results = self._iterate()
        self.lock = threading.Lock()

    def next_results(self, count: int) -> list[tuple[bytes, list[Cell]]]:
        """Up to ``count`` further results (empty when the scan is exhausted)."""
        with self.lock:
            return list(itertools.islice(self._results, max(count, 0)))

    def _iterate(self) -> Iterator[tuple[bytes, list[Cell]]]:
        spec = self.spec
        selection = spec.selection or ColumnSelection(None)
        after: bytes | None = None
        while True:
            with self._store.read_transaction() as conn:
                keys = storage.next_row_keys(
                    conn, self.table.table_id, after, spec.start, spec.stop, spec.reverse, PAGE_ROWS
                )
                if not keys:
                    return
                by_row = storage.cells_between(conn, self.table.table_id, min(keys), max(keys))
            after = keys[-1]
            now = now_ms()
            for row in keys:
                cells = visible_cells(
                    by_row.get(row, []), self.table.families, selection, now, spec.time_upper_bound
                )
                if spec.row_filter is not None and cells:
                    kept = spec.row_filter.apply(row, cells)
                    cells = kept if kept is not None else []
                if not cells:
                    continue
                if spec.batch:
                    for start in range(0, len(cells), spec.batch):
                        yield row, cells[start : start + spec.batch]
                else:
                    yield row, cells


class ScannerRegistry:
    """Scanner ids (i32, increasing) to open scanners.

    A scanner unused for ``lease_s`` seconds expires (HBase's scanner lease), so
    clients that never close their scanners cannot exhaust the server's memory;
    using an expired id raises IllegalArgument ``scanner ID is invalid``.
    """

    def __init__(self, lease_s: float = 600.0) -> None:
        self._lock = threading.Lock()
        self._next_id = 0
        self._lease_s = lease_s
        self._scanners: dict[int, Scanner] = {}
        self._last_used: dict[int, float] = {}

    def add(self, scanner: Scanner) -> int:
        """Register and return the new scanner's id (expiring idle scanners first)."""
        now = time.monotonic()
        with self._lock:
            for stale in [i for i, used in self._last_used.items() if now - used > self._lease_s]:
                del self._scanners[stale]
                del self._last_used[stale]
            scanner_id = self._next_id
            self._next_id = (self._next_id + 1) % 2**31
            self._scanners[scanner_id] = scanner
            self._last_used[scanner_id] = now
            return scanner_id

    def get(self, scanner_id: int) -> Scanner:
        """The scanner; IllegalArgument ``scanner ID is invalid`` when unknown or closed."""
        with self._lock:
            scanner = self._scanners.get(scanner_id)
            if scanner is not None:
                self._last_used[scanner_id] = time.monotonic()
        if scanner is None:
            raise errors.illegal_argument("scanner ID is invalid")
        return scanner

    def close(self, scanner_id: int) -> None:
        """Close and forget a scanner."""
        with self._lock:
            scanner = self._scanners.pop(scanner_id, None)
            self._last_used.pop(scanner_id, None)
        if scanner is None:
            raise errors.illegal_argument("scanner ID is invalid")
