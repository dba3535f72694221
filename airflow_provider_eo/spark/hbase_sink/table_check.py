"""Can HBase take the writer's cells: is the table enabled, do it and its namespace exist,
has it the family, without a TTL. Thrift1 calls only (what happybase speaks).

Each check returns the refusal's text, or None when the write may go on; the writer
(:mod:`~airflow_provider_eo.spark.hbase_sink.hbase_writer`) raises it, at once and not
retried, because no retry cures it: only a person can (enable the table, create it or its
namespace, change the family).

* :func:`table_refusal`: Thrift1 ``isTableEnabled``. False (the table is disabled, or being
  disabled or enabled) is refused: a write to such a table does not fail, it hangs in the
  Thrift server's HBase client until the writer's socket times out, again on every attempt.
  HBase answers ``isTableEnabled`` of a missing table with its ``IOError``
  (``TableNotFoundException``); whether the table is missing is then read from
  ``getTableNames`` (every user table, ``ns:table`` outside the default namespace), not
  parsed out of the error's text. Thrift1 cannot list namespaces: a table whose namespace
  holds no listed table is refused naming the namespace, missing or empty. A table that is
  listed but answered an ``IOError`` (a master failing over) raises that ``IOError`` again:
  the writer retries it like any other.
* :func:`family_refusal`: the family against Thrift1 ``getColumnDescriptors``; a missing
  family, or one with a TTL (cell versions are Kafka offsets, which HBase reads as
  milliseconds since 1970: every cell would expire at once).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import happybase  # noqa: F401  (its import registers the Hbase_thrift module)
from Hbase_thrift import IOError as HBaseIOError

#: ``timeToLive`` of a family without a TTL (HBase's ``HConstants.FOREVER``).
TTL_FOREVER = 2**31 - 1

DEFAULT_NAMESPACE = b"default"


def _text(name: bytes) -> str:
    return name.decode("utf-8", "backslashreplace")


def qualified(name: bytes) -> bytes:
    """``name`` as ``getTableNames`` lists it: without the ``default:`` namespace."""
    namespace, colon, qualifier = name.partition(b":")
    return qualifier if colon and namespace == DEFAULT_NAMESPACE else name


def namespace_of(name: bytes) -> bytes:
    """The namespace of an HBase table name (``ns:table``; ``default`` without one)."""
    namespace, colon, _ = name.partition(b":")
    return namespace if colon else DEFAULT_NAMESPACE


def missing_table_text(table: str, name: bytes, listed: Iterable[bytes], where: str) -> str:
    """The refusal of a table HBase does not list: its namespace named when no listed table
    is in it (outside the default namespace)."""
    namespace = namespace_of(name)
    if namespace != DEFAULT_NAMESPACE and not any(namespace_of(n) == namespace for n in listed):
        ns = _text(namespace)
        return (
            f"cannot write to HBase table {table!r}: its namespace {ns!r} does not exist, or holds no "
            f"table ({where}); create the namespace (HBase shell: create_namespace '{ns}') and the "
            "table, then retry"
        )
    return f"cannot write to HBase table {table!r}: the table does not exist ({where}); create it, then retry"


def table_refusal(client: Any, name: bytes, table: str, where: str) -> str | None:
    """None when HBase table ``name`` (with the connection's table prefix) is enabled; else why
    the write of ``table`` (the pipeline's name for it) is refused: disabled, missing, or its
    namespace missing. ``where`` names the connection and Thrift server, for the text.

    ``client`` is a happybase connection's Thrift client. Raises what a call raises (transport
    errors; HBase's ``IOError`` for a listed table): the writer's retryable errors.
    """
    try:
        if client.isTableEnabled(name):
            return None
    except HBaseIOError:
        listed = [qualified(n) for n in client.getTableNames()]
        if qualified(name) in listed:
            raise
        return missing_table_text(table, name, listed, where)
    return (
        f"cannot write to HBase table {table!r}: the table is disabled ({where}); enable it "
        f"(HBase shell: enable '{_text(name)}'), then retry"
    )


def family_refusal(table: str, family: bytes, descriptors: Mapping[bytes, Any]) -> str | None:
    """None when ``table`` has ``family`` without a TTL, else why writing it is refused.

    ``descriptors`` is Thrift1 ``getColumnDescriptors``' answer (keys ``b"family:"``).
    """
    name = _text(family)
    descriptor = descriptors.get(family + b":")
    if descriptor is None:
        known = ", ".join(sorted(_text(k).rstrip(":") for k in descriptors))
        return f"HBase table {table!r} has no column family {name!r} (families: {known or 'none'})"
    ttl = int(descriptor.timeToLive)
    if ttl != TTL_FOREVER:
        return (
            f"refusing to write to HBase table {table!r} column family {name!r}: it has a TTL of {ttl} s; "
            "cell versions are Kafka offsets, which HBase reads as milliseconds since 1970, so every "
            "cell would expire at once; remove the TTL (TTL => 'FOREVER') or write to another family"
        )
    return None
