"""Deletes with HBase's delete-marker semantics (a marker masks every version at or below its timestamp)."""

from __future__ import annotations

from collections.abc import Callable

import happybase
from Hbase_thrift import BatchMutation, Mutation

Factory = Callable[..., happybase.Table]


def _three_versions(table: happybase.Table, row: bytes = b"r") -> None:
    for ts in (10, 20, 30):
        table.put(row, {b"cf:a": b"a%d" % ts, b"cf:b": b"b%d" % ts, b"cg:c": b"c%d" % ts}, timestamp=ts)


def test_delete_whole_row(make_table: Factory) -> None:
    table = make_table(cf={}, cg={})
    _three_versions(table)
    table.put(b"other", {b"cf:a": b"keep"})
    table.delete(b"r")
    assert table.row(b"r") == {}
    assert table.cells(b"r", b"cf:a") == []
    assert table.row(b"other") == {b"cf:a": b"keep"}


def test_delete_columns_and_families(make_table: Factory) -> None:
    table = make_table(cf={}, cg={})
    _three_versions(table)
    table.delete(b"r", columns=[b"cf:a"])
    assert table.row(b"r") == {b"cf:b": b"b30", b"cg:c": b"c30"}
    table.delete(b"r", columns=[b"cg"])
    assert table.row(b"r") == {b"cf:b": b"b30"}


def test_delete_with_timestamp_removes_versions_at_or_below_it(make_table: Factory) -> None:
    table = make_table(cf={}, cg={})
    _three_versions(table)
    table.delete(b"r", columns=[b"cf:a"], timestamp=20)
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"a30", 30)]
    table.delete(b"r", columns=[b"cf"], timestamp=29)
    assert table.row(b"r", include_timestamp=True) == {
        b"cf:a": (b"a30", 30),
        b"cf:b": (b"b30", 30),
        b"cg:c": (b"c30", 30),
    }
    assert table.cells(b"r", b"cf:b") == [b"b30"]
    table.delete(b"r", timestamp=30)
    assert table.row(b"r") == {}


def test_marker_masks_later_puts_at_or_below_its_timestamp(make_table: Factory) -> None:
    table = make_table()
    table.delete(b"r", columns=[b"cf"], timestamp=100)
    table.put(b"r", {b"cf:a": b"at"}, timestamp=100)
    table.put(b"r", {b"cf:a": b"below"}, timestamp=99)
    assert table.row(b"r") == {}
    table.put(b"r", {b"cf:a": b"above"}, timestamp=101)
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"above", 101)]
    table.delete(b"r", columns=[b"cf:a"], timestamp=200)
    table.put(b"r", {b"cf:a": b"masked", b"cf:b": b"other column"}, timestamp=150)
    assert table.row(b"r") == {b"cf:b": b"other column"}


def test_lower_marker_does_not_unmask(make_table: Factory) -> None:
    table = make_table()
    table.delete(b"r", columns=[b"cf"], timestamp=100)
    table.delete(b"r", columns=[b"cf"], timestamp=50)
    table.put(b"r", {b"cf:a": b"v"}, timestamp=80)
    assert table.row(b"r") == {}


def test_delete_and_put_in_one_call_at_one_timestamp_leave_nothing(
    make_table: Factory, conn: happybase.Connection
) -> None:
    table = make_table()
    table.put(b"r", {b"cf:old": b"x"}, timestamp=5)
    both_orders = [
        BatchMutation(
            row=b"r", mutations=[Mutation(isDelete=True, column=b"cf"), Mutation(column=b"cf:a", value=b"1")]
        ),
        BatchMutation(
            row=b"s", mutations=[Mutation(column=b"cf:a", value=b"1"), Mutation(isDelete=True, column=b"cf")]
        ),
    ]
    conn.client.mutateRowsTs(table.name, both_orders, 10, {})
    assert table.row(b"r") == {}
    assert table.row(b"s") == {}
    conn.client.mutateRowsTs(
        table.name, [BatchMutation(row=b"r", mutations=[Mutation(column=b"cf:a", value=b"2")])], 11, {}
    )
    assert table.row(b"r", include_timestamp=True) == {b"cf:a": (b"2", 11)}


def test_family_delete_in_batch_then_newer_put(make_table: Factory) -> None:
    table = make_table()
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"1"}, timestamp=1)
    with table.batch(timestamp=5) as batch:
        batch.delete(b"r", columns=[b"cf"])
    with table.batch(timestamp=6) as batch:
        batch.put(b"r", {b"cf:b": b"2"})
    assert table.row(b"r", include_timestamp=True) == {b"cf:b": (b"2", 6)}


def test_delete_all_row_ts_and_delete_all_ts(make_table: Factory, conn: happybase.Connection) -> None:
    table = make_table(cf={}, cg={})
    _three_versions(table)
    conn.client.deleteAllRowTs(table.name, b"r", 20, {})
    assert table.row(b"r", include_timestamp=True) == {
        b"cf:a": (b"a30", 30),
        b"cf:b": (b"b30", 30),
        b"cg:c": (b"c30", 30),
    }
    conn.client.deleteAllTs(table.name, b"r", b"cf:a", 30, {})
    assert table.row(b"r") == {b"cf:b": b"b30", b"cg:c": b"c30"}
    conn.client.deleteAll(table.name, b"r", b"cg", {})
    assert table.row(b"r") == {b"cf:b": b"b30"}
    conn.client.deleteAllRow(table.name, b"r", {})
    assert table.row(b"r") == {}


def test_delete_without_timestamp_keeps_future_versions(make_table: Factory) -> None:
    table = make_table()
    far_future = 4_000_000_000_000
    table.put(b"r", {b"cf:a": b"future"}, timestamp=far_future)
    table.put(b"r", {b"cf:b": b"past"}, timestamp=1)
    table.delete(b"r")
    assert table.row(b"r", include_timestamp=True) == {b"cf:a": (b"future", far_future)}
