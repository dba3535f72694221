"""Table catalog: table names, enabled state and column families, with HBase's admin rules.

The catalog is persisted in SQLite (``hb_tables``, ``hb_families``) and cached in
memory; this process is the only writer of the database, so the cache is exact.
Admin errors carry the exceptions HBase's Thrift1 handler raises.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from dataclasses import dataclass, fields, replace

from airflow_provider_eo.devstack.hbase import errors
from airflow_provider_eo.devstack.hbase.model import ColumnSelection, FamilySpec
from airflow_provider_eo.devstack.hbase.storage import Storage

_TABLE_NAME = re.compile(rb"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_FAMILY_COLUMNS = [f.name for f in fields(FamilySpec)]


@dataclass(frozen=True)
class TableInfo:
    """A table's identity, state and families (in byte order of their names)."""

    table_id: int
    name: bytes
    enabled: bool
    created_ms: int
    families: dict[bytes, FamilySpec]


class Catalog:
    """Table metadata operations over a :class:`Storage`."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._lock = threading.Lock()
        self._tables: dict[bytes, TableInfo] = {}
        self._reload()

    def _reload(self) -> None:
        conn = self._storage.connection()
        tables: dict[bytes, TableInfo] = {}
        for table_id, name, enabled, created_ms in conn.execute(
            "SELECT table_id, name, enabled, created_ms FROM hb_tables"
        ):
            families: dict[bytes, FamilySpec] = {}
            rows = conn.execute(
                f"SELECT {','.join(_FAMILY_COLUMNS[1:])}, family FROM hb_families "
                "WHERE table_id=? ORDER BY family",
                (table_id,),
            )
            for *options, family in rows:
                spec = FamilySpec(family, *options)
                spec = replace(
                    spec, in_memory=bool(spec.in_memory), block_cache_enabled=bool(spec.block_cache_enabled)
                )
                families[family] = spec
            tables[name] = TableInfo(table_id, name, bool(enabled), created_ms, families)
        with self._lock:
            self._tables = tables

    def names(self) -> list[bytes]:
        """All table names in byte order."""
        with self._lock:
            return sorted(self._tables)

    def find(self, name: bytes) -> TableInfo | None:
        """The table named ``name``, or None."""
        with self._lock:
            return self._tables.get(name)

    def get(self, name: bytes) -> TableInfo:
        """The table named ``name``; IOError TableNotFoundException when it does not exist."""
        info = self.find(name)
        if info is None:
            raise errors.table_not_found(name)
        return info

    def get_enabled(self, name: bytes) -> TableInfo:
        """The table for data access: it must exist and be enabled."""
        info = self.get(name)
        if not info.enabled:
            raise errors.table_not_enabled(name)
        return info

    def create(self, name: bytes, families: list[FamilySpec]) -> None:
        """Create an enabled table (AlreadyExists, IllegalArgument or IOError on bad input)."""
        namespace, colon, _ = name.partition(b":")
        if colon:
            raise errors.io_error(
                "org.apache.hadoop.hbase.NamespaceNotFoundException: "
                f"{namespace.decode('utf-8', 'replace')} (the local gateway has no namespaces)"
            )
        if not _TABLE_NAME.match(name):
            raise errors.illegal_argument(
                f"java.lang.IllegalArgumentException: Illegal table name {name.decode('utf-8', 'replace')!r}"
                ": only [a-zA-Z_0-9-.] characters are allowed"
            )
        if not families:
            raise errors.io_error(
                "org.apache.hadoop.hbase.DoNotRetryIOException: Table should have at least one column family."
            )
        if len({f.name for f in families}) != len(families):
            raise errors.illegal_argument("java.lang.IllegalArgumentException: duplicate column family name")
        with self._storage.write_transaction() as conn:
            if self.find(name) is not None:
                raise errors.already_exists("table name already in use")
            cursor = conn.execute(
                "INSERT INTO hb_tables(name, enabled, created_ms) VALUES(?, 1, ?)",
                (name, int(time.time() * 1000)),
            )
            table_id = cursor.lastrowid
            for family in families:
                values = [getattr(family, column) for column in _FAMILY_COLUMNS]
                conn.execute(
                    f"INSERT INTO hb_families(table_id, family, {','.join(_FAMILY_COLUMNS[1:])}) "
                    f"VALUES(?, {','.join('?' * len(values))})",
                    (table_id, *values),
                )
        self._reload()

    def set_enabled(self, name: bytes, enabled: bool) -> None:
        """Enable or disable (TableNotDisabledException / TableNotEnabledException when already so)."""
        with self._storage.write_transaction() as conn:
            info = self.get(name)
            if info.enabled == enabled:
                raise errors.table_not_disabled(name) if enabled else errors.table_not_enabled(name)
            conn.execute("UPDATE hb_tables SET enabled=? WHERE table_id=?", (int(enabled), info.table_id))
        self._reload()

    def delete(self, name: bytes) -> None:
        """Delete a disabled table and all its data."""
        with self._storage.write_transaction() as conn:
            info = self.find(name)
            if info is None:
                raise errors.io_error("java.io.IOException: table does not exist")
            if info.enabled:
                raise errors.table_not_disabled(name)
            _delete_table_rows(conn, info.table_id)
        self._reload()


def select_columns(table: TableInfo, columns: list[bytes] | None) -> ColumnSelection:
    """The column selection of a read; IOError NoSuchColumnFamilyException for a family the table lacks."""
    selection = ColumnSelection(columns)
    for family in selection.families():
        if family not in table.families:
            raise errors.no_such_family(table.name, family)
    return selection


def _delete_table_rows(conn: sqlite3.Connection, table_id: int) -> None:
    for sql_table in ("hb_cells", "hb_delete_markers", "hb_families", "hb_tables"):
        conn.execute(f"DELETE FROM {sql_table} WHERE table_id=?", (table_id,))
