"""Thrift exceptions the gateway raises, with the messages real HBase produces.

HBase's Thrift1 handler turns every server-side ``IOException`` into ``IOError``
(message: the Java exception text), ``IllegalArgumentException`` into
``IllegalArgument`` and an existing table on create into ``AlreadyExists``.
The helpers below build those exceptions; the Java class names are kept in the
messages so code matching on them behaves as against real HBase.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_eo.devstack.hbase.idl import hbase_thrift


def io_error(message: str) -> Any:
    """A Thrift ``IOError`` carrying ``message``."""
    return hbase_thrift.IOError(message=message)


def illegal_argument(message: str) -> Any:
    """A Thrift ``IllegalArgument`` carrying ``message``."""
    return hbase_thrift.IllegalArgument(message=message)


def already_exists(message: str) -> Any:
    """A Thrift ``AlreadyExists`` carrying ``message``."""
    return hbase_thrift.AlreadyExists(message=message)


def _text(name: bytes) -> str:
    return name.decode("utf-8", "backslashreplace")


def table_not_found(table: bytes) -> Any:
    """IOError for a table that does not exist (HBase's TableNotFoundException)."""
    return io_error(f"org.apache.hadoop.hbase.TableNotFoundException: {_text(table)}")


def table_not_enabled(table: bytes) -> Any:
    """IOError for data access to, or disabling of, a disabled table."""
    return io_error(f"org.apache.hadoop.hbase.TableNotEnabledException: {_text(table)} is disabled.")


def table_not_disabled(table: bytes) -> Any:
    """IOError for enabling or deleting a table that is enabled."""
    return io_error(f"org.apache.hadoop.hbase.TableNotDisabledException: {_text(table)}")


def no_such_family(table: bytes, family: bytes) -> Any:
    """IOError for a column family the table does not have."""
    return io_error(
        "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: "
        f"Column family {_text(family)} does not exist in region {_text(table)},,1 "
        f"in table '{_text(table)}'"
    )


def unsupported_filter(detail: str) -> Any:
    """IOError for a filter string this gateway cannot evaluate exactly."""
    return io_error(f"java.lang.IllegalArgumentException: {detail} (local HBase gateway)")
