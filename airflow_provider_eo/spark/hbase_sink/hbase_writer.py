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

Before the first segment that touches a column family is sent, the family is checked
against the table's descriptors (Thrift1 ``getColumnDescriptors``, read once per
connection): a family the table does not have, or a family with a TTL, raises
:class:`UnsafeColumnFamilyError` at once (not retried; nothing of that segment is
written). A TTL is refused because cell versions are Kafka offsets: HBase reads them as
milliseconds after 1970, so every cell would be expired as soon as it is written.
``KEEP_DELETED_CELLS`` cannot be checked: Thrift1 does not expose it (docs/spark.md).
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
from airflow_provider_eo.errors import EoError, error_text
from airflow_provider_eo.spark.hbase_sink.segments import Segment, WriteCall
from airflow_provider_eo.spark.hbase_sink.thrift_calls import mutate_rows_ts
from airflow_provider_eo.spark.hbase_sink.thrift_endpoints import ThriftEndpoints

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

#: ``timeToLive`` of a family without a TTL (HBase's ``HConstants.FOREVER``).
TTL_FOREVER = 2**31 - 1


class HBaseWriteError(EoError, RuntimeError):
    """A segment could not be written after all attempts (the HBase category of the taxonomy)."""


class UnsafeColumnFamilyError(HBaseWriteError):
    """The table has no such family, or the family's settings would lose the written cells."""


def segment_families(segment: Segment) -> set[bytes]:
    """The column families a segment writes to (puts' ``family:qualifier`` and deletes)."""
    families = {family for row_families in segment.deletes.values() for family in row_families}
    columns = set().union(*segment.puts.values(), *segment.versioned_puts.values())  # distinct names
    families.update(column.split(b":", 1)[0] for column in columns)
    return families


def versions_text(calls: list[WriteCall]) -> str:
    """``version 14`` (one call) or ``versions 100..250 in 3 calls``, for messages."""
    if len(calls) == 1:
        return f"version {calls[0].timestamp}"
    return f"versions {calls[0].timestamp}..{calls[-1].timestamp} in {len(calls)} calls"


def check_family(table: str, family: bytes, descriptors: Mapping[bytes, Any]) -> None:
    """Raise :class:`UnsafeColumnFamilyError` unless ``table`` has ``family`` without a TTL.

    ``descriptors`` is Thrift1 ``getColumnDescriptors``' answer (keys ``b"family:"``).
    """
    name = family.decode("utf-8", "backslashreplace")
    descriptor = descriptors.get(family + b":")
    if descriptor is None:
        known = ", ".join(sorted(k.decode("utf-8", "backslashreplace").rstrip(":") for k in descriptors))
        raise UnsafeColumnFamilyError(
            f"HBase table {table!r} has no column family {name!r} (families: {known or 'none'})"
        )
    ttl = int(descriptor.timeToLive)
    if ttl != TTL_FOREVER:
        raise UnsafeColumnFamilyError(
            f"refusing to write to HBase table {table!r} column family {name!r}: it has a TTL of {ttl} s; "
            "cell versions are Kafka offsets, which HBase reads as milliseconds since 1970, so every "
            "cell would expire at once; remove the TTL (TTL => 'FOREVER') or write to another family"
        )


class SegmentWriter:
    """Writes segments to one table over one (re-opened on error) happybase connection.

    ``connection_kwargs`` are ``happybase.Connection`` arguments (see
    ``clients.connection_settings.hbase_connection_kwargs``); they may hold secrets: not logged.
    ``servers`` (``clients.connection_settings.hbase_endpoints``; empty: the kwargs' host/port) are
    the Thrift servers, ``task_index`` picks the first one (index modulo their number).
    ``attempts`` per segment is raised to the number of servers when lower; the sleep before
    attempt ``k + 1`` is ``backoff_s * 2**(k - 1)``, at most :data:`MAX_BACKOFF_S`.
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
    ) -> None:
        self.endpoints = ThriftEndpoints(connection_kwargs, servers, task_index)
        self.table = table
        self.attempts = max(attempts, len(self.endpoints))
        self.backoff_s = backoff_s
        self._connection: happybase.Connection | None = None
        self._table_name: bytes | None = None
        self._descriptors: dict[bytes, Any] | None = None
        self._checked_families: set[bytes] = set()
        self._heads: dict[bytes, bytes] = {}  # column name -> its encoded head (thrift_calls)

    def _connect(self) -> tuple[happybase.Connection, bytes]:
        if self._connection is None or self._table_name is None:
            connection = happybase.Connection(autoconnect=False, **self.endpoints.connection_kwargs())
            connection.open()
            self._connection = connection
            self._table_name = connection.table(self.table).name  # with the table prefix
        return self._connection, self._table_name

    def _check_families(self, connection: happybase.Connection, table_name: bytes, segment: Segment) -> None:
        unchecked = segment_families(segment) - self._checked_families
        if not unchecked:
            return
        if self._descriptors is None:
            self._descriptors = dict(connection.client.getColumnDescriptors(table_name))
        for family in sorted(unchecked):
            check_family(self.table, family, self._descriptors)
        self._checked_families |= unchecked

    def write(self, segment: Segment) -> None:
        """Write one segment (no-op when empty); raises HBaseWriteError after ``attempts``,
        :class:`UnsafeColumnFamilyError` at once (nothing written) for a missing or TTL family."""
        if segment.is_empty():
            return
        calls = segment.calls()
        done = 0  # calls written: a retry goes on with the next one
        versions = versions_text(calls)
        last_error: Exception | None = None
        for attempt in range(1, self.attempts + 1):
            try:
                connection, table_name = self._connect()
                self._check_families(connection, table_name, segment)
                for call in calls[done:]:
                    mutate_rows_ts(connection.client, table_name, call, self._heads)
                    done += 1
                return
            except UnsafeColumnFamilyError:
                raise
            except RETRYABLE_ERRORS as exc:  # the call is idempotent
                last_error = exc
                self.close()
                moved = self.endpoints.failover_text(*self.endpoints.advance())
                log.warning(
                    "HBase write failed table=%s offsets=[%d,%d] %s attempt=%d/%d %s: %s",
                    self.table,
                    segment.first_offset,
                    segment.last_offset,
                    versions,
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
                    f"cannot write to HBase table {self.table!r}: segment of offsets "
                    f"[{segment.first_offset}, {segment.last_offset}] ({versions}) "
                    f"failed and is not retried: {error_text(exc)}"
                ) from exc
        raise HBaseWriteError(
            f"cannot write to HBase table {self.table!r}: segment of offsets "
            f"[{segment.first_offset}, {segment.last_offset}] ({versions}) failed "
            f"{self.attempts} times; last error: {error_text(last_error) if last_error else None}"
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
