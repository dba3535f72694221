"""The Thrift1 ``Hbase`` service handler: one method per IDL call, HBase's semantics.

Reads take the time upper bound of ``*Ts`` calls as exclusive (``[0, ts)``,
HBase's ``setTimeRange(0, ts)``); writes use the call's timestamp for every
mutation. Unknown tables, families and disabled tables raise the Thrift
exceptions HBase raises (see :mod:`errors`). Any unexpected failure becomes an
``IOError`` instead of dropping the connection.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from airflow_provider_eo.devstack.hbase import errors, mutations, results
from airflow_provider_eo.devstack.hbase.catalog import Catalog, TableInfo, select_columns
from airflow_provider_eo.devstack.hbase.family_options import family_from_thrift
from airflow_provider_eo.devstack.hbase.idl import hbase_thrift
from airflow_provider_eo.devstack.hbase.model import LATEST_TIMESTAMP
from airflow_provider_eo.devstack.hbase.scan_calls import ScanCalls
from airflow_provider_eo.devstack.hbase.scanner import ScannerRegistry
from airflow_provider_eo.devstack.hbase.storage import Storage, row_cells
from airflow_provider_eo.devstack.hbase.visibility import visible_cells

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])
_THRIFT_ERRORS = (hbase_thrift.IOError, hbase_thrift.IllegalArgument, hbase_thrift.AlreadyExists)


def _thrift_errors_only(method: F) -> F:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except _THRIFT_ERRORS:
            raise
        except Exception as exc:
            log.exception("internal error in %s", method.__name__)
            raise errors.io_error(f"java.io.IOException: internal gateway error: {exc!r}") from exc

    return wrapper  # type: ignore[return-value]


class HBaseHandler(ScanCalls):
    """Implements every call of happybase's ``Hbase.thrift`` over :class:`Storage`."""

    def __init__(self, store: Storage, host: str, port: int) -> None:
        self.store = store
        self.catalog = Catalog(store)
        self.scanners = ScannerRegistry()
        self.host = host
        self.port = port

    # ---- table admin ----
    def enableTable(self, tableName: bytes) -> None:
        self.catalog.set_enabled(tableName, True)

    def disableTable(self, tableName: bytes) -> None:
        self.catalog.set_enabled(tableName, False)

    def isTableEnabled(self, tableName: bytes) -> bool:
        return self.catalog.get(tableName).enabled

    def compact(self, tableNameOrRegionName: bytes) -> None:
        self._table_or_region(tableNameOrRegionName)

    def majorCompact(self, tableNameOrRegionName: bytes) -> None:
        self._table_or_region(tableNameOrRegionName)

    def _table_or_region(self, name: bytes) -> TableInfo:
        table = self.catalog.find(name) or self.catalog.find(name.split(b",", 1)[0])
        if table is None:
            raise errors.table_not_found(name)
        return table

    def getTableNames(self) -> list[bytes]:
        return self.catalog.names()

    def getColumnDescriptors(self, tableName: bytes) -> dict[bytes, Any]:
        table = self.catalog.get(tableName)
        return {spec.name + b":": results.column_descriptor(spec) for spec in table.families.values()}

    def getTableRegions(self, tableName: bytes) -> list[Any]:
        table = self.catalog.find(tableName)
        if table is None:
            return []
        encoded = hashlib.md5(table.name + str(table.created_ms).encode()).hexdigest().encode()
        region = hbase_thrift.TRegionInfo(
            startKey=b"",
            endKey=b"",
            id=table.created_ms,
            version=1,
            port=self.port,
            name=table.name + b",," + str(table.created_ms).encode() + b"." + encoded + b".",
            serverName=self.host.encode(),
        )
        return [region]

    def createTable(self, tableName: bytes, columnFamilies: list[Any]) -> None:
        self.catalog.create(tableName, [family_from_thrift(d) for d in columnFamilies or []])

    def deleteTable(self, tableName: bytes) -> None:
        self.catalog.delete(tableName)

    # ---- reads ----
    def _read(
        self, table_name: bytes, rows: list[bytes], columns: list[bytes] | None, ts: int, versions: int = 1
    ) -> list[tuple[bytes, list[Any]]]:
        table = self.catalog.get_enabled(table_name)
        selection = select_columns(table, columns)
        with self.store.read_transaction() as conn:
            stored = row_cells(conn, table.table_id, sorted(set(rows)))
        now = mutations.now_ms()
        found = []
        for row in rows:
            cells = visible_cells(stored.get(row, []), table.families, selection, now, ts, versions)
            if cells:
                found.append((row, cells))
        return found

    def get(self, tableName: bytes, row: bytes, column: bytes, attributes: Any) -> list[Any]:
        return self.getVerTs(tableName, row, column, LATEST_TIMESTAMP, 1, attributes)

    def getVer(
        self, tableName: bytes, row: bytes, column: bytes, numVersions: int, attributes: Any
    ) -> list[Any]:
        return self.getVerTs(tableName, row, column, LATEST_TIMESTAMP, numVersions, attributes)

    def getVerTs(
        self, tableName: bytes, row: bytes, column: bytes, timestamp: int, numVersions: int, attributes: Any
    ) -> list[Any]:
        found = self._read(tableName, [row], [column], timestamp, max(numVersions, 1))
        return results.tcells(found[0][1]) if found else []

    def getRow(self, tableName: bytes, row: bytes, attributes: Any) -> list[Any]:
        return self.getRowsWithColumnsTs(tableName, [row], None, LATEST_TIMESTAMP, attributes)

    def getRowWithColumns(self, tableName: bytes, row: bytes, columns: Any, attributes: Any) -> list[Any]:
        return self.getRowsWithColumnsTs(tableName, [row], columns, LATEST_TIMESTAMP, attributes)

    def getRowTs(self, tableName: bytes, row: bytes, timestamp: int, attributes: Any) -> list[Any]:
        return self.getRowsWithColumnsTs(tableName, [row], None, timestamp, attributes)

    def getRowWithColumnsTs(
        self, tableName: bytes, row: bytes, columns: Any, timestamp: int, attributes: Any
    ) -> list[Any]:
        return self.getRowsWithColumnsTs(tableName, [row], columns, timestamp, attributes)

    def getRows(self, tableName: bytes, rows: list[bytes], attributes: Any) -> list[Any]:
        return self.getRowsWithColumnsTs(tableName, rows, None, LATEST_TIMESTAMP, attributes)

    def getRowsWithColumns(
        self, tableName: bytes, rows: list[bytes], columns: Any, attributes: Any
    ) -> list[Any]:
        return self.getRowsWithColumnsTs(tableName, rows, columns, LATEST_TIMESTAMP, attributes)

    def getRowsTs(self, tableName: bytes, rows: list[bytes], timestamp: int, attributes: Any) -> list[Any]:
        return self.getRowsWithColumnsTs(tableName, rows, None, timestamp, attributes)

    def getRowsWithColumnsTs(
        self, tableName: bytes, rows: list[bytes], columns: Any, timestamp: int, attributes: Any
    ) -> list[Any]:
        found = self._read(tableName, list(rows or []), columns, timestamp)
        return [results.row_result(row, cells) for row, cells in found]

    # ---- writes ----
    def mutateRow(self, tableName: bytes, row: bytes, mutations_: list[Any], attributes: Any) -> None:
        self.mutateRowTs(tableName, row, mutations_, LATEST_TIMESTAMP, attributes)

    def mutateRowTs(
        self, tableName: bytes, row: bytes, mutations_: list[Any], timestamp: int, attributes: Any
    ) -> None:
        table = self.catalog.get_enabled(tableName)
        ts = mutations.resolve_ts(timestamp)
        plan = mutations.plan_row(table, row, mutations_ or [], ts, strict=False)
        mutations.apply(self.store, table, [plan], ts)

    def mutateRows(self, tableName: bytes, rowBatches: list[Any], attributes: Any) -> None:
        self.mutateRowsTs(tableName, rowBatches, LATEST_TIMESTAMP, attributes)

    def mutateRowsTs(self, tableName: bytes, rowBatches: list[Any], timestamp: int, attributes: Any) -> None:
        table = self.catalog.get_enabled(tableName)
        ts = mutations.resolve_ts(timestamp)
        plans = [
            mutations.plan_row(table, b.row or b"", b.mutations or [], ts, strict=True)
            for b in rowBatches or []
        ]
        mutations.apply(self.store, table, plans, ts)

    def atomicIncrement(self, tableName: bytes, row: bytes, column: bytes, value: int) -> int:
        return mutations.increment(self.store, self.catalog.get_enabled(tableName), row, column, value)

    def increment(self, increment: Any) -> None:
        self.atomicIncrement(increment.table, increment.row, increment.column, increment.ammount)

    def incrementRows(self, increments: list[Any]) -> None:
        for one in increments or []:
            self.increment(one)

    def deleteAll(self, tableName: bytes, row: bytes, column: bytes, attributes: Any) -> None:
        self.deleteAllTs(tableName, row, column, LATEST_TIMESTAMP, attributes)

    def deleteAllTs(
        self, tableName: bytes, row: bytes, column: bytes, timestamp: int, attributes: Any
    ) -> None:
        delete = hbase_thrift.Mutation(isDelete=True, column=column)
        self.mutateRowTs(tableName, row, [delete], timestamp, attributes)

    def deleteAllRow(self, tableName: bytes, row: bytes, attributes: Any) -> None:
        self.deleteAllRowTs(tableName, row, LATEST_TIMESTAMP, attributes)

    def deleteAllRowTs(self, tableName: bytes, row: bytes, timestamp: int, attributes: Any) -> None:
        mutations.delete_row(self.store, self.catalog.get_enabled(tableName), row, timestamp)


for _call in hbase_thrift.Hbase.thrift_services:
    setattr(HBaseHandler, _call, _thrift_errors_only(getattr(HBaseHandler, _call)))
