"""Reads through happybase: row, rows, cells with columns, versions, timestamp bound, include_timestamp."""

from __future__ import annotations

from collections.abc import Callable

import happybase
import pytest
from Hbase_thrift import IOError

Factory = Callable[..., happybase.Table]


@pytest.fixture
def table(make_table: Factory) -> happybase.Table:
    table = make_table(cf={"max_versions": 5}, cg={})
    for ts in (10, 20, 30):
        table.put(b"r1", {b"cf:a": b"a%d" % ts, b"cf:b": b"b%d" % ts, b"cg:c": b"c%d" % ts}, timestamp=ts)
    table.put(b"r2", {b"cf:a": b"r2a"}, timestamp=15)
    return table


def test_row_columns_as_families_and_qualifiers(table: happybase.Table) -> None:
    assert table.row(b"r1") == {b"cf:a": b"a30", b"cf:b": b"b30", b"cg:c": b"c30"}
    assert table.row(b"r1", columns=[b"cf"]) == {b"cf:a": b"a30", b"cf:b": b"b30"}
    assert table.row(b"r1", columns=[b"cf:b", b"cg"]) == {b"cf:b": b"b30", b"cg:c": b"c30"}
    assert table.row(b"r1", columns=[b"cf:zzz"]) == {}
    assert table.row(b"missing") == {}


def test_row_timestamp_is_an_exclusive_upper_bound(table: happybase.Table) -> None:
    assert table.row(b"r1", timestamp=30, include_timestamp=True) == {
        b"cf:a": (b"a20", 20),
        b"cf:b": (b"b20", 20),
        b"cg:c": (b"c20", 20),
    }
    assert table.row(b"r1", timestamp=31, columns=[b"cf:a"]) == {b"cf:a": b"a30"}
    assert table.row(b"r1", timestamp=10) == {}


def test_rows_returns_existing_rows_in_request_order(table: happybase.Table) -> None:
    assert table.rows([b"r2", b"missing", b"r1"], columns=[b"cf:a"]) == [
        (b"r2", {b"cf:a": b"r2a"}),
        (b"r1", {b"cf:a": b"a30"}),
    ]
    assert table.rows([b"r1", b"r2"], timestamp=20, include_timestamp=True) == [
        (b"r1", {b"cf:a": (b"a10", 10), b"cf:b": (b"b10", 10), b"cg:c": (b"c10", 10)}),
        (b"r2", {b"cf:a": (b"r2a", 15)}),
    ]
    assert table.rows([]) == {}


def test_cells_versions_newest_first(table: happybase.Table) -> None:
    assert table.cells(b"r1", b"cf:a") == [b"a30", b"a20", b"a10"]
    assert table.cells(b"r1", b"cf:a", versions=2, include_timestamp=True) == [(b"a30", 30), (b"a20", 20)]
    assert table.cells(b"r1", b"cf:a", timestamp=30, include_timestamp=True) == [(b"a20", 20), (b"a10", 10)]
    assert table.cells(b"r1", b"cf:a", versions=1, timestamp=21) == [b"a20"]
    assert table.cells(b"r1", b"cf:nope") == []
    assert table.cells(b"missing", b"cf:a") == []


def test_cells_of_a_family_lists_every_qualifier(table: happybase.Table) -> None:
    assert table.cells(b"r1", b"cf", versions=2) == [b"a30", b"a20", b"b30", b"b20"]


def test_row_and_column_keys_are_in_byte_order(make_table: Factory) -> None:
    table = make_table()
    keys = [b"\xff", b"a", b"B", b"a\x00", b"", b"\x00", b"ab"]
    for key in keys[1:5] + keys[5:]:
        if key:
            table.put(key, {b"cf:\xfe": b"1", b"cf:Z": b"2", b"cf:a": b"3", b"cf:\x00": b"4"})
    table.put(b"\xff", {b"cf:q": b"x"})
    assert [k for k, _ in table.scan()] == sorted(k for k in keys if k)
    _, columns = next(iter(table.scan(sorted_columns=True)))
    assert list(columns) == [b"cf:\x00", b"cf:Z", b"cf:a", b"cf:\xfe"]


def test_unknown_family_in_columns_is_an_error(table: happybase.Table) -> None:
    with pytest.raises(IOError) as err:
        table.row(b"r1", columns=[b"nope:q"])
    assert err.value.message.startswith(
        b"org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: Column family nope does not exist"
    )
    with pytest.raises(IOError):
        table.cells(b"r1", b"nope:q")
    with pytest.raises(IOError):
        list(table.scan(columns=[b"nope"]))
