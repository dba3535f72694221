"""Send segments to HBase: one Thrift1 ``mutateRowsTs`` call per segment and version
(encoded straight from the segment: :mod:`~airflow_provider_eo.spark.hbase_sink.thrift_calls`).

Every offset-versioned mutation of a :class:`Segment` carries the segment's timestamp (the
offset of its last record); field-versioned cells carry their own version, one call per
distinct version (:meth:`Segment.calls`). Writing a segment again therefore writes
identical cells at identical versions: a call that failed for a reason a retry can cure
(:data:`RETRYABLE_ERRORS`) is retried as-is (reconnecting first, to the NEXT Thrift server
of the connection's list: :mod:`~airflow_provider_eo.spark.hbase_sink.thrift_endpoints`; the calls of
the segment already done are not sent again), and after ``attempts`` failures (at least
one per server) :class:`HBaseWriteError` names the table, the offsets and the last error (its
cause). Each failed attempt logs one warning line: table, offsets, versions, attempt and
``failover=<from>-><to>`` (or ``reconnect=<server>`` with a single server), no secrets.
Any other error fails at once as :class:`HBaseWriteError` with the error as its cause.
The table prefix of the connection is applied like happybase does.

Before its first segment, a connection checks the table
(:mod:`~airflow_provider_eo.spark.hbase_sink.table_check`): a table that is disabled, does
not exist, or whose namespace does not exist raises :class:`UnwritableTableError` at once,
naming the table (or namespace), the connection and the Thrift server (not retried: a
disabled table would otherwise hold every attempt until the socket timeout). Before the
first segment that touches a column family, the family is checked against the table's
descriptors (Thrift1 ``getColumnDescriptors``, read once per connection): a family the
table does not have, or a family with a TTL, raises :class:`UnsafeColumnFamilyError` at
once. Neither writes anything of that segment. A retryable failure reconnects, and the new
connection checks again: a table disabled while a task writes is refused at the next
attempt, after one failed call. ``KEEP_DELETED_CELLS`` cannot be checked: Thrift1 does not
expose it (docs/spark.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import happybase
from Hbase_thrift import IOError as HBaseIOError  # registered by happybase's thriftpy2 loader
from thriftpy2.protocol.exc import TProtocolException
from thriftpy2.transport import TTransportException

from airflow_provider_eo.clients.connection_settings import Endpoint
from airflow_provider_eo.clients.hbase_thrift import hbase_connection
from airflow_provider_eo.errors import EoError, error_text
from airflow_provider_eo.spark.hbase_sink.segment_batches import SegmentBatch
from airflow_provider_eo.spark.hbase_sink.segments import Segment, WriteCall
from airflow_provider_eo.spark.hbase_sink.table_check import family_refusal, table_refusal
from airflow_provider_eo.spark.hbase_sink.thrift_calls import mutate_rows_ts, mutate_rows_ts_pipelined
from airflow_provider_eo.spark.hbase_sink.thrift_endpoints import ThriftEndpoints, endpoint_text

log = logging.getLogger(__name__)


#: What a retry of the same idempotent call can cure: a broken, refused or timed-out
#: connection, a garbled answer, or HBase's own IOError (a region moving, a server restarting).
RETRYABLE_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    TTransportException,
    TProtocolException,
    HBaseIOError,
)

#: Longest sleep between two attempts of one segment, in seconds.
MAX_BACKOFF_S = 8.0


class HBaseWriteError(EoError, RuntimeError):
    """A segment could not be written after all attempts (the HBase category of the taxonomy)."""


class UnsafeColumnFamilyError(HBaseWriteError):
    """The table has no such family, or the family's settings would lose the written cells."""


class UnwritableTableError(HBaseWriteError):
    """The table is disabled, does not exist, or its namespace does not exist."""


#: What the writer raises at once, never retried: only a person can cure them.
REFUSALS = (UnsafeColumnFamilyError, UnwritableTableError)


def segment_families(segment: Segment) -> set[bytes]:
    """The column families a segment writes to (puts' ``family:qualifier`` and deletes)."""
    families = {family for row_families in segment.deletes.values() for family in row_families}
    families.update(family for row_families in segment.versioned_deletes.values() for family in row_families)
    columns = set().union(*segment.puts.values(), *segment.versioned_puts.values())  # distinct names
    families.update(column.split(b":", 1)[0] for column in columns)
    return families


def versions_text(calls: list[WriteCall]) -> str:
    """``version 14`` (one call) or ``versions 100..250 in 3 calls``, for messages."""
    if len(calls) == 1:
        return f"version {calls[0].timestamp}"
    return f"versions {calls[0].timestamp}..{calls[-1].timestamp} in {len(calls)} calls"


class SegmentWriter:
    """Writes segments to one table over one (re-opened on error) happybase connection.

    ``connection_kwargs`` are ``happybase.Connection`` arguments (see
    ``clients.connection_settings.hbase_connection_kwargs``); they may hold secrets: not logged.
    ``servers`` (``clients.connection_settings.hbase_endpoints``; empty: the kwargs' host/port) are
    the Thrift servers, ``task_index`` picks the first one (index modulo their number).
    ``attempts`` per segment is raised to the number of servers when lower; the sleep before
    attempt ``k + 1`` is ``backoff_s * 2**(k - 1)``, at most :data:`MAX_BACKOFF_S`.
    ``connection_id`` (the Airflow connection's id, None: unknown) is named in refusals.
    """

    def __init__(
        self,
        connection_kwargs: Mapping[str, Any],
        table: str,
        attempts: int = 4,
        backoff_s: float = 0.5,
        *,
        servers: Sequence[Endpoint] = (),
        task_index: int = 0,
        connection_id: str | None = None,
    ) -> None:
        self.endpoints = ThriftEndpoints(connection_kwargs, servers, task_index)
        self.table = table
        self.connection_id = connection_id
        self.attempts = max(attempts, len(self.endpoints))
        self.backoff_s = backoff_s
        self._connection: happybase.Connection | None = None
        self._table_name: bytes | None = None
        self._descriptors: dict[bytes, Any] | None = None
        self._checked_families: set[bytes] = set()
        self._heads: dict[bytes, bytes] = {}  # column name -> its encoded head (thrift_calls)

    def where(self) -> str:
        """``connection 'eo_hbase', Thrift server host:port`` (the server in use), for messages."""
        server = f"Thrift server {endpoint_text(self.endpoints.current)}"
        return server if self.connection_id is None else f"connection {self.connection_id!r}, {server}"

    def _connect(self) -> tuple[happybase.Connection, bytes]:
        """The open connection and the table's name; a new connection checks the table first
        (:func:`table_refusal`: raises :class:`UnwritableTableError`)."""
        if self._connection is None or self._table_name is None:
            self.close()
            self._connection = hbase_connection(
                {**self.endpoints.connection_kwargs(), "autoconnect": False}, conn_id=self.connection_id
            )
            self._connection.open()
            table_name = self._connection.table(self.table).name  # with the table prefix
            refusal = table_refusal(self._connection.client, table_name, self.table, self.where())
            if refusal is not None:
                raise UnwritableTableError(refusal)
            self._table_name = table_name
        return self._connection, self._table_name

    def _check_families(
        self, connection: happybase.Connection, table_name: bytes, families: set[bytes]
    ) -> None:
        unchecked = families - self._checked_families
        if not unchecked:
            return
        if self._descriptors is None:
            self._descriptors = dict(connection.client.getColumnDescriptors(table_name))
        for family in sorted(unchecked):
            refusal = family_refusal(self.table, family, self._descriptors)
            if refusal is not None:
                raise UnsafeColumnFamilyError(refusal)
        self._checked_families |= unchecked

    def write(self, segment: Segment) -> None:
        """Write one segment (no-op when empty); raises HBaseWriteError after ``attempts``, and
        at once (nothing of the segment written) :class:`UnwritableTableError` for a disabled or
        missing table or namespace, :class:`UnsafeColumnFamilyError` for a missing or TTL family."""
        if segment.is_empty():
            return
        calls = segment.calls()
        offsets = (segment.first_offset, segment.last_offset)
        self._write_calls(
            calls,
            segment_families(segment),
            f"offsets=[{offsets[0]},{offsets[1]}] {versions_text(calls)}",
            f"segment of offsets [{offsets[0]}, {offsets[1]}] ({versions_text(calls)})",
        )

    def write_batch(self, batch: SegmentBatch) -> None:
        """Write a batch of segments (``segment_batches.py``): one segment as :meth:`write`,
        several as the batch's merged calls, sent pipelined; retried, refused and failed as
        :meth:`write`, the messages naming the batch's ranges (all of them failed)."""
        if len(batch.segments) == 1:
            self.write(batch.segments[0])
            return
        calls = batch.calls()
        if not calls:
            return
        families = set().union(*(segment_families(segment) for segment in batch.segments))
        count, owners = len(batch.segments), batch.owners_text()
        self._write_calls(
            calls,
            families,
            f"segments={count} ranges={owners} {versions_text(calls)}",
            f"batch of {count} segments of ranges {owners} ({versions_text(calls)})",
        )

    def _write_calls(self, calls: list[WriteCall], families: set[bytes], fields: str, what: str) -> None:
        """Send ``calls`` (pipelined when several) after the table and family checks; the retry,
        refusal and failure rules of :meth:`write`. ``fields`` names them in the warning line,
        ``what`` in the error."""
        done = 0  # calls answered: a retry goes on with the next one
        last_error: Exception | None = None

        def answered() -> None:
            nonlocal done
            done += 1

        for attempt in range(1, self.attempts + 1):
            try:
                connection, table_name = self._connect()
                self._check_families(connection, table_name, families)
                if len(calls) - done == 1:
                    mutate_rows_ts(connection.client, table_name, calls[done], self._heads)
                    done += 1
                else:
                    client = connection.client
                    mutate_rows_ts_pipelined(client, table_name, calls[done:], self._heads, answered)
                return
            except REFUSALS:
                raise
            except RETRYABLE_ERRORS as exc:  # the call is idempotent
                last_error = exc
                self.close()
                moved = self.endpoints.failover_text(*self.endpoints.advance())
                log.warning(
                    "HBase write failed table=%s %s attempt=%d/%d %s: %s",
                    self.table,
                    fields,
                    attempt,
                    self.attempts,
                    moved,
                    type(exc).__name__,
                )
                if attempt < self.attempts:
                    time.sleep(min(MAX_BACKOFF_S, self.backoff_s * 2 ** (attempt - 1)))
            except Exception as exc:  # no retry cures it: an illegal argument, a bug
                self.close()
                raise HBaseWriteError(
                    f"cannot write to HBase table {self.table!r}: {what} failed and is not retried: "
                    f"{error_text(exc)}"
                ) from exc
        raise HBaseWriteError(
            f"cannot write to HBase table {self.table!r}: {what} failed {self.attempts} times; "
            f"last error: {error_text(last_error) if last_error else None}"
        ) from last_error

    def close(self) -> None:
        """Close the connection (a later write reconnects)."""
        if self._connection is not None:
            try:
                self._connection.close()
            except Exception:  # closing a broken transport
                log.debug("closing a broken HBase connection failed", exc_info=True)
        self._connection = None
        self._table_name = None
        self._descriptors = None
