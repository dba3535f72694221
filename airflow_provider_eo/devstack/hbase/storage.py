"""SQLite storage of the gateway: schema, connections, transactions and cell access.

Durability policy: WAL journal with ``synchronous=FULL``; every acknowledged
Thrift write call is exactly one committed SQLite transaction, whose WAL frames
are fsynced before the call returns. An acknowledged write therefore survives
``kill -9`` of the gateway (and a power loss). Writers are serialised by one
process-wide lock; readers run concurrently on per-thread connections and see a
consistent snapshot for the duration of a read transaction.

Delete markers are stored (family or column scope, newest timestamp kept) so a
later put at or below a marker's timestamp stays masked, as in HBase; cells a
marker masks are removed physically when the marker is written.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from airflow_provider_eo.devstack.hbase.model import Cell

DB_FILE_NAME = "hbase-gateway.sqlite3"
FAMILY_SCOPE = 0
COLUMN_SCOPE = 1
_IN_CHUNK = 500

SCHEMA = """
CREATE TABLE IF NOT EXISTS hb_tables(
  table_id INTEGER PRIMARY KEY AUTOINCREMENT, name BLOB NOT NULL UNIQUE,
  enabled INTEGER NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS hb_families(
  table_id INTEGER NOT NULL, family BLOB NOT NULL, max_versions INTEGER NOT NULL,
  compression TEXT NOT NULL, in_memory INTEGER NOT NULL, bloom_filter_type TEXT NOT NULL,
  bloom_filter_vector_size INTEGER NOT NULL, bloom_filter_nb_hashes INTEGER NOT NULL,
  block_cache_enabled INTEGER NOT NULL, time_to_live INTEGER NOT NULL,
  PRIMARY KEY(table_id, family));
CREATE TABLE IF NOT EXISTS hb_cells(
  table_id INTEGER NOT NULL, row BLOB NOT NULL, family BLOB NOT NULL, qualifier BLOB NOT NULL,
  ts INTEGER NOT NULL, value BLOB NOT NULL,
  PRIMARY KEY(table_id, row, family, qualifier, ts DESC)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hb_delete_markers(
  table_id INTEGER NOT NULL, row BLOB NOT NULL, family BLOB NOT NULL, scope INTEGER NOT NULL,
  qualifier BLOB NOT NULL, ts INTEGER NOT NULL,
  PRIMARY KEY(table_id, row, family, scope, qualifier)) WITHOUT ROWID;
"""

Markers = dict[tuple[bytes, bytes, int, bytes], int]
"""(row, family, scope, qualifier) -> newest delete-marker timestamp."""


class Storage:
    """The gateway's SQLite database in ``data_dir`` (created on first use)."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / DB_FILE_NAME
        self.write_lock = threading.Lock()
        self._local = threading.local()
        with self.write_lock:
            self.connection().executescript(SCHEMA)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (WAL, synchronous=FULL, autocommit off by explicit BEGIN)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
        return conn

    @contextmanager
    def write_transaction(self) -> Iterator[sqlite3.Connection]:
        """One serialised, durable write transaction; rolled back if the body raises."""
        conn = self.connection()
        with self.write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def read_transaction(self) -> Iterator[sqlite3.Connection]:
        """A snapshot read transaction."""
        conn = self.connection()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")


def has_markers(conn: sqlite3.Connection, table_id: int) -> bool:
    """Whether the table has any delete marker (lets puts skip marker look-ups)."""
    found = conn.execute("SELECT 1 FROM hb_delete_markers WHERE table_id=? LIMIT 1", (table_id,)).fetchone()
    return found is not None


def load_markers(conn: sqlite3.Connection, table_id: int, rows: Sequence[bytes]) -> Markers:
    """Delete markers of the given rows."""
    markers: Markers = {}
    for start in range(0, len(rows), _IN_CHUNK):
        chunk = rows[start : start + _IN_CHUNK]
        sql = (
            "SELECT row, family, scope, qualifier, ts FROM hb_delete_markers "
            f"WHERE table_id=? AND row IN ({','.join('?' * len(chunk))})"
        )
        for row, family, scope, qualifier, ts in conn.execute(sql, (table_id, *chunk)):
            markers[(row, family, scope, qualifier)] = ts
    return markers


def write_marker(
    conn: sqlite3.Connection, table_id: int, row: bytes, family: bytes, qualifier: bytes | None, ts: int
) -> None:
    """Record a family (``qualifier`` None) or column delete marker and drop the cells it masks."""
    scope = FAMILY_SCOPE if qualifier is None else COLUMN_SCOPE
    conn.execute(
        "INSERT INTO hb_delete_markers(table_id,row,family,scope,qualifier,ts) VALUES(?,?,?,?,?,?) "
        "ON CONFLICT(table_id,row,family,scope,qualifier) DO UPDATE SET ts=max(ts, excluded.ts)",
        (table_id, row, family, scope, qualifier or b"", ts),
    )
    if qualifier is None:
        conn.execute(
            "DELETE FROM hb_cells WHERE table_id=? AND row=? AND family=? AND ts<=?",
            (table_id, row, family, ts),
        )
    else:
        conn.execute(
            "DELETE FROM hb_cells WHERE table_id=? AND row=? AND family=? AND qualifier=? AND ts<=?",
            (table_id, row, family, qualifier, ts),
        )


def write_cells(conn: sqlite3.Connection, table_id: int, cells: Iterable[Cell]) -> None:
    """Insert cells; a cell with the same coordinates and timestamp is overwritten."""
    conn.executemany(
        "INSERT OR REPLACE INTO hb_cells(table_id,row,family,qualifier,ts,value) VALUES(?,?,?,?,?,?)",
        ((table_id, c.row, c.family, c.qualifier, c.ts, c.value) for c in cells),
    )


def row_cells(conn: sqlite3.Connection, table_id: int, rows: Sequence[bytes]) -> dict[bytes, list[Cell]]:
    """All stored cells of the given rows, per row in (family, qualifier, ts desc) order."""
    found: dict[bytes, list[Cell]] = {}
    for start in range(0, len(rows), _IN_CHUNK):
        chunk = rows[start : start + _IN_CHUNK]
        sql = (
            "SELECT row, family, qualifier, ts, value FROM hb_cells "
            f"WHERE table_id=? AND row IN ({','.join('?' * len(chunk))}) "
            "ORDER BY row, family, qualifier, ts DESC"
        )
        for row, family, qualifier, ts, value in conn.execute(sql, (table_id, *chunk)):
            found.setdefault(row, []).append(Cell(row, family, qualifier, ts, value))
    return found


def next_row_keys(
    conn: sqlite3.Connection,
    table_id: int,
    after: bytes | None,
    start: bytes,
    stop: bytes | None,
    reverse: bool,
    limit: int,
) -> list[bytes]:
    """Up to ``limit`` row keys of a scan range, continuing strictly after ``after``.

    Forward: ``start <= row < stop``; reverse: ``stop < row <= start`` (an empty
    ``start`` means the last row); ``stop`` None or empty means unbounded.
    """
    clauses = ["table_id=?"]
    args: list[object] = [table_id]
    if not reverse:
        clauses.append("row > ?" if after is not None else "row >= ?")
        args.append(after if after is not None else start)
        if stop:
            clauses.append("row < ?")
            args.append(stop)
    else:
        if after is not None:
            clauses.append("row < ?")
            args.append(after)
        elif start:
            clauses.append("row <= ?")
            args.append(start)
        if stop:
            clauses.append("row > ?")
            args.append(stop)
    order = "DESC" if reverse else "ASC"
    sql = f"SELECT DISTINCT row FROM hb_cells WHERE {' AND '.join(clauses)} ORDER BY row {order} LIMIT ?"
    return [r for (r,) in conn.execute(sql, (*args, limit))]


def cells_between(
    conn: sqlite3.Connection, table_id: int, low: bytes, high: bytes
) -> dict[bytes, list[Cell]]:
    """All cells of rows in ``[low, high]``, per row in (family, qualifier, ts desc) order."""
    found: dict[bytes, list[Cell]] = {}
    sql = (
        "SELECT row, family, qualifier, ts, value FROM hb_cells WHERE table_id=? AND row>=? AND row<=? "
        "ORDER BY row, family, qualifier, ts DESC"
    )
    for row, family, qualifier, ts, value in conn.execute(sql, (table_id, low, high)):
        found.setdefault(row, []).append(Cell(row, family, qualifier, ts, value))
    return found
