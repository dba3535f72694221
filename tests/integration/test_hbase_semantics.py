"""HBase behaviour the writer relies on, checked on the real server through Thrift1.

The cell-version rule (docs/ARCHITECTURE.md "Cell versions") assumes: explicit
``mutateRowsTs`` timestamps are the versions and the newest version is visible whatever
the arrival order; rewriting a version replaces it; a family delete marker hides every
version at or below its timestamp, also puts arriving later with such a timestamp, and a
delete and a put of one row in one call at one timestamp leave nothing (hence segments
close before a put that follows a delete); ``max_versions`` keeps the newest versions.
Plus the reason the writer refuses a family TTL: offsets read as milliseconds since 1970
are expired at once. Two tables for the whole module (creating one costs about a second).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import happybase
import pytest
from Hbase_thrift import BatchMutation, Mutation

from airflow_provider_eo.spark.hbase_sink.hbase_writer import SegmentWriter, UnsafeColumnFamilyError
from airflow_provider_eo.spark.hbase_sink.segments import Segment
from tests.conftest import StackInfo

pytestmark = pytest.mark.integration


@dataclass
class Tables:
    connection: happybase.Connection
    plain: happybase.Table  # family d, max_versions 2
    ttl: happybase.Table  # family d with a TTL of one hour, family e without

    def mutate(self, row: bytes, timestamp: int, *mutations: Any) -> None:
        """One ``mutateRowsTs`` call on ``plain``, as the writer sends a segment."""
        batch = [BatchMutation(row=row, mutations=list(mutations))]
        self.connection.client.mutateRowsTs(self.plain.name, batch, timestamp, {})


def put(column: bytes, value: bytes) -> Any:
    return Mutation(column=column, value=value)


FAMILY_DELETE = Mutation(isDelete=True, column=b"d")


@pytest.fixture(scope="module")
def tables(stack: StackInfo) -> Iterator[Tables]:
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    suffix = uuid.uuid4().hex[:8]
    names = (f"sem_plain_{suffix}", f"sem_ttl_{suffix}")
    connection.create_table(names[0], {"d": {"max_versions": 2}})
    connection.create_table(names[1], {"d": {"time_to_live": 3600}, "e": {}})
    yield Tables(connection, connection.table(names[0]), connection.table(names[1]))
    for name in names:
        connection.delete_table(name, disable=True)
    connection.close()


def test_newest_explicit_version_is_visible_whatever_the_arrival_order(tables: Tables) -> None:
    tables.mutate(b"order", 10, put(b"d:a", b"new"))
    tables.mutate(b"order", 5, put(b"d:a", b"old"), put(b"d:b", b"old"))  # an older range replayed later
    tables.mutate(b"order", 10, put(b"d:a", b"new"))  # the same segment again: the same version
    assert tables.plain.row(b"order", include_timestamp=True) == {b"d:a": (b"new", 10), b"d:b": (b"old", 5)}
    assert tables.plain.cells(b"order", b"d:a", versions=5, include_timestamp=True) == [
        (b"new", 10),
        (b"old", 5),
    ]
    # A read "as of" a version: the timestamp bound is exclusive.
    assert tables.plain.row(b"order", timestamp=10) == {b"d:a": b"old", b"d:b": b"old"}
    assert tables.plain.row(b"order", timestamp=11) == {b"d:a": b"new", b"d:b": b"old"}


def test_family_delete_hides_versions_at_or_below_it_also_when_they_arrive_later(tables: Tables) -> None:
    tables.mutate(b"del", 3, put(b"d:a", b"3"))
    tables.mutate(b"del", 7, FAMILY_DELETE)
    tables.mutate(b"del", 7, put(b"d:a", b"7"))  # same version as the marker
    tables.mutate(b"del", 5, put(b"d:a", b"5"), put(b"d:b", b"5"))  # lower version, arriving later
    assert tables.plain.row(b"del") == {}
    tables.mutate(b"del", 8, put(b"d:b", b"8"))
    assert tables.plain.row(b"del", include_timestamp=True) == {b"d:b": (b"8", 8)}


def test_delete_and_put_of_one_row_in_one_call_leave_nothing(tables: Tables) -> None:
    tables.mutate(b"same", 4, put(b"d:a", b"before"))
    tables.mutate(b"same", 9, FAMILY_DELETE, put(b"d:a", b"after"))
    tables.mutate(b"same2", 9, put(b"d:a", b"after"), FAMILY_DELETE)
    assert tables.plain.rows([b"same", b"same2"]) == []


def test_max_versions_keeps_the_newest_and_an_old_replay_changes_nothing_visible(tables: Tables) -> None:
    for version in (1, 2, 3):
        tables.mutate(b"versions", version, put(b"d:a", b"v%d" % version))
    tables.mutate(b"versions", 1, put(b"d:a", b"v1"))  # replay of the oldest
    assert tables.plain.cells(b"versions", b"d:a", versions=5, include_timestamp=True) == [
        (b"v3", 3),
        (b"v2", 2),
    ]
    assert tables.plain.row(b"versions") == {b"d:a": b"v3"}


def test_a_family_ttl_expires_offset_versioned_cells_at_once(tables: Tables) -> None:
    batch = [BatchMutation(row=b"r", mutations=[put(b"d:a", b"1"), put(b"e:a", b"1")])]
    tables.connection.client.mutateRowsTs(tables.ttl.name, batch, 5, {})
    assert tables.ttl.row(b"r") == {b"e:a": b"1"}  # version 5 = 5 ms after 1970: older than any TTL
    assert {f: d["time_to_live"] for f, d in tables.ttl.families().items()} == {b"d": 3600, b"e": 2**31 - 1}


def test_writer_refuses_a_family_with_a_ttl_and_a_missing_family(stack: StackInfo, tables: Tables) -> None:
    name = tables.ttl.name.decode()
    writer = SegmentWriter({"host": stack.hbase_host, "port": stack.hbase_port}, name, backoff_s=0)
    try:
        writer.write(Segment(0, 1, 2, puts={b"ok": {b"e:a": b"1"}}))  # family e has no TTL
        with pytest.raises(UnsafeColumnFamilyError) as ttl:
            writer.write(Segment(2, 3, 2, puts={b"refused": {b"e:a": b"1", b"d:a": b"1"}}))
        with pytest.raises(UnsafeColumnFamilyError) as missing:
            writer.write(Segment(4, 4, 1, deletes={b"ok": (b"x",)}))
    finally:
        writer.close()
    assert str(ttl.value) == (
        f"refusing to write to HBase table {name!r} column family 'd': it has a TTL of 3600 s; cell versions "
        "are Kafka offsets, which HBase reads as milliseconds since 1970, so every cell would expire at "
        "once; remove the TTL (TTL => 'FOREVER') or write to another family"
    )
    assert str(missing.value) == f"HBase table {name!r} has no column family 'x' (families: d, e)"
    assert dict(tables.ttl.scan()) == {b"ok": {b"e:a": b"1"}, b"r": {b"e:a": b"1"}}  # nothing of the refused
