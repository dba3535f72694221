"""Thrift1 scanner calls (``scannerOpen*``, ``scannerGet*``, ``scannerClose``) and the calls
happybase never makes (answered with a clear ``IOError``).

A mixin of :class:`~airflow_provider_eo.devstack.hbase.handler.HBaseHandler`.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_eo.devstack.hbase import errors, results
from airflow_provider_eo.devstack.hbase.catalog import Catalog, select_columns
from airflow_provider_eo.devstack.hbase.filter_parser import parse_filter
from airflow_provider_eo.devstack.hbase.idl import hbase_thrift
from airflow_provider_eo.devstack.hbase.model import LATEST_TIMESTAMP
from airflow_provider_eo.devstack.hbase.scanner import Scanner, ScannerRegistry, ScanSpec
from airflow_provider_eo.devstack.hbase.storage import Storage


class ScanCalls:
    """Scanner calls over ``store``/``catalog``; open scanners live in ``scanners``."""

    store: Storage
    catalog: Catalog
    scanners: ScannerRegistry

    def scannerOpenWithScan(self, tableName: bytes, scan: Any, attributes: Any) -> int:
        table = self.catalog.get_enabled(tableName)
        spec = ScanSpec(
            start=scan.startRow or b"",
            stop=scan.stopRow,
            time_upper_bound=LATEST_TIMESTAMP if scan.timestamp is None else scan.timestamp,
            selection=select_columns(table, scan.columns),
            row_filter=parse_filter(scan.filterString) if scan.filterString else None,
            batch=scan.batchSize if scan.batchSize and scan.batchSize > 0 else None,
            sort_columns=bool(scan.sortColumns),
            reverse=bool(scan.reversed),
        )
        return self.scanners.add(Scanner(self.store, table, spec))

    def _open(
        self,
        table_name: bytes,
        start: bytes,
        stop: bytes | None,
        columns: Any,
        ts: int,
        prefix: bytes | None = None,
    ) -> int:
        scan = hbase_thrift.TScan(startRow=start, stopRow=stop, columns=columns, timestamp=ts)
        if prefix is not None:
            scan.filterString = b"PrefixFilter('" + prefix.replace(b"'", b"''") + b"')"
        return self.scannerOpenWithScan(table_name, scan, None)

    def scannerOpen(self, tableName: bytes, startRow: bytes, columns: Any, attributes: Any) -> int:
        return self._open(tableName, startRow, None, columns, LATEST_TIMESTAMP)

    def scannerOpenWithStop(
        self, tableName: bytes, startRow: bytes, stopRow: bytes, columns: Any, attributes: Any
    ) -> int:
        return self._open(tableName, startRow, stopRow, columns, LATEST_TIMESTAMP)

    def scannerOpenWithPrefix(
        self, tableName: bytes, startAndPrefix: bytes, columns: Any, attributes: Any
    ) -> int:
        return self._open(tableName, startAndPrefix, None, columns, LATEST_TIMESTAMP, prefix=startAndPrefix)

    def scannerOpenTs(
        self, tableName: bytes, startRow: bytes, columns: Any, timestamp: int, attributes: Any
    ) -> int:
        return self._open(tableName, startRow, None, columns, timestamp)

    def scannerOpenWithStopTs(
        self, tableName: bytes, startRow: bytes, stopRow: bytes, columns: Any, timestamp: int, attributes: Any
    ) -> int:
        return self._open(tableName, startRow, stopRow, columns, timestamp)

    def scannerGetList(self, id: int, nbRows: int) -> list[Any]:
        scanner = self.scanners.get(id)
        found = scanner.next_results(nbRows)
        return [results.row_result(row, cells, scanner.spec.sort_columns) for row, cells in found]

    def scannerGet(self, id: int) -> list[Any]:
        return self.scannerGetList(id, 1)

    def scannerClose(self, id: int) -> None:
        self.scanners.close(id)

    def _unsupported(self, call: str) -> Any:
        return errors.io_error(
            f"java.lang.UnsupportedOperationException: {call} is not supported by the local gateway"
        )

    def getRowOrBefore(self, tableName: bytes, row: bytes, family: bytes) -> list[Any]:
        raise self._unsupported("getRowOrBefore")

    def getRegionInfo(self, row: bytes) -> Any:
        raise self._unsupported("getRegionInfo")

    def append(self, append: Any) -> list[Any]:
        raise self._unsupported("append")

    def checkAndPut(
        self, tableName: bytes, row: bytes, column: bytes, value: bytes, mput: Any, attributes: Any
    ) -> bool:
        raise self._unsupported("checkAndPut")
