"""Filter strings of HBase's filter language, their AND/OR combination, and the error for unsupported ones."""

from __future__ import annotations

import struct
from collections.abc import Callable

import happybase
import pytest
from Hbase_thrift import IOError

Factory = Callable[..., happybase.Table]


@pytest.fixture
def table(make_table: Factory) -> happybase.Table:
    table = make_table(cf={}, cg={})
    table.put(
        b"user1", {b"cf:name": b"ann", b"cf:age": b"31", b"cf:city": b"Oslo", b"cg:x": b"1"}, timestamp=5
    )
    table.put(b"user2", {b"cf:name": b"bob", b"cf:age": b"25", b"cg:x": b"2"}, timestamp=5)
    table.put(b"user3", {b"cf:name": b"cid", b"cf:cityname": b"Rome"}, timestamp=5)
    table.put(b"admin", {b"cf:name": b"root", b"cf:age": b"99"}, timestamp=5)
    return table


def scan(
    table: happybase.Table, filter_string: str, **kwargs: object
) -> list[tuple[bytes, dict[bytes, bytes]]]:
    return list(table.scan(filter=filter_string.encode(), **kwargs))


def test_prefix_filter(table: happybase.Table) -> None:
    assert [k for k, _ in scan(table, "PrefixFilter('user')")] == [b"user1", b"user2", b"user3"]


def test_key_only_filter(table: happybase.Table) -> None:
    assert scan(table, "KeyOnlyFilter()", row_prefix=b"user2") == [
        (b"user2", {b"cf:name": b"", b"cf:age": b"", b"cg:x": b""})
    ]
    assert scan(table, "KeyOnlyFilter(true)", row_prefix=b"user2", columns=[b"cf:name"]) == [
        (b"user2", {b"cf:name": struct.pack(">i", 3)})
    ]


def test_first_key_only_filter(table: happybase.Table) -> None:
    assert scan(table, "FirstKeyOnlyFilter()") == [
        (b"admin", {b"cf:age": b"99"}),
        (b"user1", {b"cf:age": b"31"}),
        (b"user2", {b"cf:age": b"25"}),
        (b"user3", {b"cf:cityname": b"Rome"}),
    ]


def test_column_prefix_filter(table: happybase.Table) -> None:
    assert scan(table, "ColumnPrefixFilter('city')") == [
        (b"user1", {b"cf:city": b"Oslo"}),
        (b"user3", {b"cf:cityname": b"Rome"}),
    ]
    assert scan(table, "MultipleColumnPrefixFilter('age', 'x')", row_prefix=b"user2") == [
        (b"user2", {b"cf:age": b"25", b"cg:x": b"2"})
    ]


@pytest.mark.parametrize(
    ("filter_string", "expected"),
    [
        ("SingleColumnValueFilter('cf', 'age', >, 'binary:30')", [b"admin", b"user1", b"user3"]),
        ("SingleColumnValueFilter('cf', 'age', >, 'binary:30', true, true)", [b"admin", b"user1"]),
        ("SingleColumnValueFilter('cf', 'age', <=, 'binary:31', true, true)", [b"user1", b"user2"]),
        ("SingleColumnValueFilter('cf', 'age', =, 'binary:25', true, true)", [b"user2"]),
        ("SingleColumnValueFilter('cf', 'age', !=, 'binary:25', true, true)", [b"admin", b"user1"]),
        ("SingleColumnValueFilter('cf', 'name', =, 'binaryprefix:ro', true, true)", [b"admin"]),
        ("SingleColumnValueFilter('cf', 'name', =, 'regexstring:^[ab]', true, true)", [b"user1", b"user2"]),
        ("SingleColumnValueFilter('cf', 'name', =, 'substring:O', true, true)", [b"admin", b"user2"]),
    ],
)
def test_single_column_value_filter(
    table: happybase.Table, filter_string: str, expected: list[bytes]
) -> None:
    assert [k for k, _ in scan(table, filter_string)] == expected


def test_single_column_value_filter_returns_whole_rows(table: happybase.Table) -> None:
    assert scan(table, "SingleColumnValueFilter('cf', 'name', =, 'binary:bob', true, true)") == [
        (b"user2", {b"cf:name": b"bob", b"cf:age": b"25", b"cg:x": b"2"})
    ]
    assert scan(table, "SingleColumnValueExcludeFilter('cf', 'name', =, 'binary:bob', true, true)") == [
        (b"user2", {b"cf:age": b"25", b"cg:x": b"2"})
    ]


def test_page_filter(table: happybase.Table) -> None:
    assert [k for k, _ in scan(table, "PageFilter(2)")] == [b"admin", b"user1"]
    assert [k for k, _ in scan(table, "PageFilter(2)", reverse=True)] == [b"user3", b"user2"]


def test_compare_filters(table: happybase.Table) -> None:
    assert [k for k, _ in scan(table, "RowFilter(>=, 'binary:user2')")] == [b"user2", b"user3"]
    assert scan(table, "QualifierFilter(=, 'binary:name') AND ValueFilter(=, 'regexstring:^[bc]')") == [
        (b"user2", {b"cf:name": b"bob"}),
        (b"user3", {b"cf:name": b"cid"}),
    ]
    assert scan(table, "FamilyFilter(=, 'binary:cg')") == [
        (b"user1", {b"cg:x": b"1"}),
        (b"user2", {b"cg:x": b"2"}),
    ]


def test_and_or_and_parentheses(table: happybase.Table) -> None:
    assert scan(table, "PrefixFilter('user') AND ColumnPrefixFilter('name') AND PageFilter(2)") == [
        (b"user1", {b"cf:name": b"ann"}),
        (b"user2", {b"cf:name": b"bob"}),
    ]
    assert [k for k, _ in scan(table, "PrefixFilter('admin') OR PrefixFilter('user3')")] == [
        b"admin",
        b"user3",
    ]
    combined = (
        "(PrefixFilter('user') AND SingleColumnValueFilter('cf','age',<,'binary:30',true,true)) "
        "OR RowFilter(=, 'binary:admin')"
    )
    assert [k for k, _ in scan(table, combined)] == [b"admin", b"user2"]
    assert [k for k, _ in scan(table, "PrefixFilter('x') OR PrefixFilter('admin') AND PageFilter(0)")] == []


def test_quotes_are_escaped_by_doubling(make_table: Factory) -> None:
    table = make_table()
    table.put(b"it's", {b"cf:q": b"1"})
    table.put(b"its", {b"cf:q": b"2"})
    assert [k for k, _ in scan(table, "PrefixFilter('it''s')")] == [b"it's"]


@pytest.mark.parametrize(
    ("filter_string", "fragment"),
    [
        ("TimestampsFilter(1, 2)", b"Filter Name TimestampsFilter not supported"),
        ("SKIP ValueFilter(=, 'binary:x')", b"SKIP operator is not supported"),
        ("PrefixFilter('a'", b"Incorrect filter string"),
        ("PrefixFilter('a') AND", b"Incorrect filter string"),
        ("ValueFilter(=, 'nocomparator')", b"comparator"),
        ("ValueFilter(~, 'binary:x')", b"Incorrect filter string"),
        ("SingleColumnValueFilter('cf', 'q', =, 'unknown:x')", b"Comparator type unknown not supported"),
    ],
)
def test_unsupported_or_malformed_filter_is_a_clear_io_error(
    table: happybase.Table, filter_string: str, fragment: bytes
) -> None:
    with pytest.raises(IOError) as err:
        scan(table, filter_string)
    assert fragment in err.value.message
    assert err.value.message.startswith(b"java.lang.IllegalArgumentException: ")
