"""Writes with HBase's Thrift1 semantics: mutateRow(s)(Ts), deleteAll*(Ts), atomicIncrement.

One call is one durable SQLite transaction (all or nothing). Every mutation of
a call carries the call's timestamp (``LATEST_TIMESTAMP`` = the server clock in
ms). A delete of a family (column ``b"cf"``) or of a column (``b"cf:q"``) masks
every version at or below its timestamp, including puts of the same call and
later puts at or below it; puts need a qualifier (``mutateRows``: IllegalArgument,
``mutateRow``: ignored, as HBase's handler does).
"""

from __future__ import annotations

import sqlite3
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from airflow_provider_eo.devstack.hbase import errors, storage
from airflow_provider_eo.devstack.hbase.catalog import TableInfo
from airflow_provider_eo.devstack.hbase.model import LATEST_TIMESTAMP, Cell, ColumnSelection, parse_column
from airflow_provider_eo.devstack.hbase.storage import Storage
from airflow_provider_eo.devstack.hbase.visibility import visible_cells

_I64 = struct.Struct(">q")


def now_ms() -> int:
    """The server clock in epoch milliseconds (HBase cell timestamps)."""
    return int(time.time() * 1000)


def resolve_ts(timestamp: int) -> int:
    """The timestamp a write uses: the server clock for LATEST_TIMESTAMP; IllegalArgument if negative."""
    if timestamp < 0:
        raise errors.illegal_argument(
            f"java.lang.IllegalArgumentException: Timestamp cannot be negative. ts={timestamp}"
        )
    return now_ms() if timestamp == LATEST_TIMESTAMP else timestamp


@dataclass
class RowMutation:
    """The validated mutations of one row: deletes (family, qualifier|None) and put cells."""

    row: bytes
    deletes: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    puts: list[Cell] = field(default_factory=list)


def plan_row(table: TableInfo, row: bytes, mutations: Iterable[object], ts: int, strict: bool) -> RowMutation:
    """Validate one row's Thrift ``Mutation`` list into a :class:`RowMutation`."""
    if not row:
        raise errors.illegal_argument("java.lang.IllegalArgumentException: Row length is 0")
    plan = RowMutation(row)
    for mutation in mutations:
        family, qualifier = parse_column(getattr(mutation, "column", None) or b"")
        if family not in table.families:
            raise errors.no_such_family(table.name, family)
        if getattr(mutation, "isDelete", False):
            plan.deletes.append((family, qualifier))
        elif qualifier is None:
            if strict:
                raise errors.illegal_argument(
                    "java.lang.IllegalArgumentException: Invalid famAndQf provided."
                )
        else:
            plan.puts.append(Cell(row, family, qualifier, ts, getattr(mutation, "value", None) or b""))
    return plan


def apply(store: Storage, table: TableInfo, plans: list[RowMutation], ts: int) -> None:
    """Apply planned row mutations at ``ts`` in one transaction (deletes mask puts at or below them)."""
    with store.write_transaction() as conn:
        _apply(conn, table, plans, ts)


def _apply(conn: sqlite3.Connection, table: TableInfo, plans: list[RowMutation], ts: int) -> None:
    for plan in plans:
        for family, qualifier in plan.deletes:
            storage.write_marker(conn, table.table_id, plan.row, family, qualifier, ts)
    puts = [p for p in plans if p.puts]
    if not puts:
        return
    if storage.has_markers(conn, table.table_id):
        markers = storage.load_markers(conn, table.table_id, [p.row for p in puts])
        cells = [c for p in puts for c in p.puts if not _masked(markers, c)]
    else:
        cells = [c for p in puts for c in p.puts]
    storage.write_cells(conn, table.table_id, cells)


def _masked(markers: storage.Markers, cell: Cell) -> bool:
    family_ts = markers.get((cell.row, cell.family, storage.FAMILY_SCOPE, b""))
    column_ts = markers.get((cell.row, cell.family, storage.COLUMN_SCOPE, cell.qualifier))
    return (family_ts is not None and cell.ts <= family_ts) or (
        column_ts is not None and cell.ts <= column_ts
    )


def delete_row(store: Storage, table: TableInfo, row: bytes, timestamp: int) -> None:
    """deleteAllRowTs: family delete markers for every family of the table at ``timestamp``."""
    ts = resolve_ts(timestamp)
    plan = RowMutation(row, deletes=[(family, None) for family in table.families])
    apply(store, table, [plan], ts)


def increment(store: Storage, table: TableInfo, row: bytes, column: bytes, amount: int) -> int:
    """atomicIncrement: add ``amount`` to an 8-byte big-endian counter (missing = 0); return the new value.

    The new value is written at ``max(now, current version's ts)``. HBase uses
    ``max(now, current + 1)``; at the gateway's speed (many increments per
    millisecond) that would run the counter's timestamp ahead of the clock and
    hide a following ``counter_set``, which real HBase's slower round trips avoid.
    """
    family, qualifier = parse_column(column)
    if family not in table.families:
        raise errors.no_such_family(table.name, family)
    qualifier = qualifier or b""
    with store.write_transaction() as conn:
        stored = storage.row_cells(conn, table.table_id, [row]).get(row, [])
        now = now_ms()
        current = [
            c
            for c in visible_cells(stored, table.families, ColumnSelection(None), now)
            if (c.family, c.qualifier) == (family, qualifier)
        ]
        value = 0
        ts = now
        if current:
            if len(current[0].value) != 8:
                raise errors.io_error(
                    "org.apache.hadoop.hbase.DoNotRetryIOException: Field is not a long, "
                    f"it's {len(current[0].value)} bytes wide"
                )
            value = _I64.unpack(current[0].value)[0]
            ts = max(now, current[0].ts)
        value = (value + amount + 2**63) % 2**64 - 2**63
        plan = RowMutation(row, puts=[Cell(row, family, qualifier, ts, _I64.pack(value))])
        _apply(conn, table, [plan], ts)
    return value
