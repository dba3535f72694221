"""Read what HBase holds for a batch of audited rows: batched Thrift1 reads, never a write.

Contract of :class:`HBaseRowsReader`: :meth:`~HBaseRowsReader.view` answers a
:class:`~.hbase_view.ReadPlan` with a :class:`~.hbase_view.RowsView` in one
``getRowsWithColumns`` call per ``rows_per_call`` rows for the newest cells, and one
``getRowsWithColumnsTs`` call per distinct version and ``rows_per_call`` rows for the cells
at or below it (a time-range read ``[0, version + 1)``), all over the table's families
(read once per connection). It never mutates anything. A table that cannot be read raises
:class:`HBaseReadError` naming it and the cause.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_eo.audit.hbase_view import ReadPlan, RowCells, RowsView
from airflow_provider_eo.clients.hbase_thrift import hbase_connection
from airflow_provider_eo.errors import EoError

#: Rows per Thrift call.
ROWS_PER_CALL = 500


class HBaseReadError(EoError, RuntimeError):
    """The audited table could not be read (gone, disabled, unreachable)."""


class HBaseRowsReader:
    """Batched reads of one table (see the module contract); a context manager."""

    def __init__(
        self,
        kwargs: Mapping[str, Any],
        table: str,
        *,
        conn_id: str | None = None,
        rows_per_call: int = ROWS_PER_CALL,
    ) -> None:
        self._kwargs = kwargs
        self._conn_id = conn_id
        self.table_name = table
        self.rows_per_call = rows_per_call
        self._connection: Any = None
        self._families: list[bytes] | None = None
        self.calls = 0

    def __enter__(self) -> HBaseRowsReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection, if one was opened."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def view(self, plan: ReadPlan) -> RowsView:
        """The batch's newest cells and its cells at or below each version it names."""
        try:
            latest = self._read(plan.rows, None)
            at = {version: self._read(rows, version + 1) for version, rows in plan.at.items()}
        except HBaseReadError:
            raise
        except Exception as exc:  # Thrift's IOError, a broken socket: the table cannot be read
            self.close()
            raise HBaseReadError(
                f"cannot read HBase table {self.table_name!r}: {type(exc).__name__}: {exc}"
            ) from exc
        return RowsView(latest, at)

    def _table(self) -> Any:
        if self._connection is None:
            self._connection = hbase_connection(self._kwargs, conn_id=self._conn_id)
            self._families = None
        table = self._connection.table(self.table_name)
        if self._families is None:
            self.calls += 1
            self._families = [name if isinstance(name, bytes) else name.encode() for name in table.families()]
        return table

    def _read(self, rows: Sequence[bytes], below: int | None) -> dict[bytes, RowCells]:
        table = self._table()
        found: dict[bytes, RowCells] = {}
        for first in range(0, len(rows), self.rows_per_call):
            chunk = list(rows[first : first + self.rows_per_call])
            self.calls += 1
            if below is None:
                answer = table.rows(chunk, include_timestamp=True)
            else:
                answer = table.rows(chunk, columns=self._families, timestamp=below, include_timestamp=True)
            for row, cells in answer:  # happybase's {column: (value, ts)} already: kept, not copied
                found[row] = cells
        return found
