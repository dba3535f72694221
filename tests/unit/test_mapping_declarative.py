"""The declarative mapping: selected and renamed nested fields, flattening, row-key
templates over value and key fields with hash/salt prefixes, Kafka metadata columns,
versions from a field, string and bytes values (exact RowPut bytes throughout)."""

from __future__ import annotations

import json

import pytest

from airflow_provider_eo.spark.records import KafkaRecord, RowDelete, RowPut
from airflow_provider_eo.spark.task.mapping import BadRecord
from tests.unit.test_mapping import make_mapper, rec

ORDER = {
    "order_id": 5,
    "customer": {"id": 17, "name": "Zoë"},
    "order": {
        "items": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}],
        "attrs": {"color": "red", "size": 3},
        "total": 12.5,
        "note": None,
        "updated_at": 1_700_000_000_123,
    },
}
ORDER_JSON = json.dumps(ORDER).encode()
ORDER_COLUMNS = {
    "cid": "customer.id",
    "name": "customer.name",
    "items": "order.items",
    "attrs": "order.attrs",
    "total": "order.total",
    "note": "order.note",
    "gone": "order.nope",
    "first_sku": "order.items.0.sku",
    "third_sku": "order.items.2.sku",
    "through_null": "order.note.x",
}


def test_columns_select_and_rename_nested_paths_missing_ones_write_no_cell() -> None:
    put = make_mapper(columns=ORDER_COLUMNS).map(rec(ORDER_JSON))
    assert put == RowPut(
        b"k1",
        {
            b"cf:cid": b"17",
            b"cf:name": "Zoë".encode(),
            b"cf:items": b'[{"sku":"a","qty":2},{"sku":"b","qty":1}]',
            b"cf:attrs": b'{"color":"red","size":3}',
            b"cf:total": b"12.5",
            b"cf:note": b"null",
            b"cf:first_sku": b"a",
        },
    )


def test_flatten_arrays_and_maps_under_selected_columns() -> None:
    columns = {"items": "order.items", "attrs": "order.attrs", "total": "order.total"}
    put = make_mapper(columns=columns, flatten=("order.items", "order.attrs", "order.total")).map(
        rec(ORDER_JSON)
    )
    assert put == RowPut(
        b"k1",
        {
            b"cf:items.0": b'{"sku":"a","qty":2}',
            b"cf:items.1": b'{"sku":"b","qty":1}',
            b"cf:attrs.color": b"red",
            b"cf:attrs.size": b"3",
            b"cf:total": b"12.5",  # not an array or a map: one ordinary cell
        },
    )


def test_flatten_top_level_fields_without_columns() -> None:
    value = b'{"tags": ["x", 2, null, [1]], "m": {"a": true}, "empty": [], "n": null, "s": "v"}'
    put = make_mapper(flatten=("tags", "m", "empty", "n")).map(rec(value))
    assert put == RowPut(
        b"k1",
        {
            b"cf:tags.0": b"x",
            b"cf:tags.1": b"2",
            b"cf:tags.2": b"null",
            b"cf:tags.3": b"[1]",
            b"cf:m.a": b"true",
            b"cf:n": b"null",
            b"cf:s": b"v",
        },
    )


def test_row_key_template_over_nested_paths_composite() -> None:
    put = make_mapper(row_key="{customer.id}:{order_id}:{order.items.1.sku}").map(rec(ORDER_JSON, key=None))
    assert put.row == b"17:5:b"


def test_row_key_from_decoded_key_fields_and_tombstones_with_them() -> None:
    key = b'{"region": "eu", "id": 17}'
    mapper = make_mapper(key_format="json", row_key="{key.region}:{key.id}")
    assert mapper.map(rec(b'{"a": 1}', key=key)) == RowPut(b"eu:17", {b"cf:a": b"1"})
    assert mapper.map(rec(None, key=key)) == RowDelete(b"eu:17", (b"cf",))
    assert make_mapper(key_format="string", row_key="u-{key}").map(rec(None, key=b"17")) == RowDelete(
        b"u-17", (b"cf",)
    )
    assert make_mapper(row_key="{key}/{a}").map(rec(b'{"a": 1}', key=b"\xff")).row == b"\xff/1"
    with pytest.raises(BadRecord) as err:
        mapper.map(rec(b"{}", key=b'{"region": "eu"}'))
    assert err.value.reason == "row key field 'key.id' is missing or null"
    with pytest.raises(BadRecord) as err:
        mapper.map(rec(b"{}", key=None))
    assert err.value.reason == "row key field 'key.region' is missing or null"
    with pytest.raises(BadRecord) as err:
        mapper.map(rec(b"{}", key=b"{bad"))
    assert err.value.reason.startswith("key is not valid JSON: Expecting property name")
    with pytest.raises(BadRecord) as err:
        make_mapper(row_key="{key}:{a}").map(rec(None))
    assert err.value.reason == (
        "a delete (tombstone) cannot derive its row key from the row key template "
        "(it names fields of the value; a template of {key...} fields only can)"
    )


@pytest.mark.parametrize(
    ("prefix", "row_key", "key", "expected"),
    [
        ("hash:4", "kafka_key", b"k1", b"b637k1"),  # md5(b"k1") = b637...
        ("hash:4", "u-{user_id}", b"k1", b"4cadu-17"),  # md5(b"u-17") = 4cad...
        ("salt:16", "kafka_key", b"k1", b"09k1"),  # crc32(b"k1") % 16 = 9, width len("15") = 2
        ("salt:16", "u-{user_id}", b"k1", b"12u-17"),  # crc32(b"u-17") % 16 = 12
        ("salt:7", "kafka_key", b"k1", b"0k1"),  # crc32(b"k1") % 7 = 0, width len("6") = 1
        ("salt:100", "{region}:{user_id}", b"k1", b"73eu:17"),  # crc32(b"eu:17") % 100 = 73
    ],
)
def test_row_key_prefixes_are_exact(prefix: str, row_key: str, key: bytes, expected: bytes) -> None:
    mapper = make_mapper(row_key=row_key, row_key_prefix=prefix)
    assert mapper.map(rec(b'{"user_id": 17, "region": "eu"}', key=key)).row == expected


def test_prefix_applies_to_tombstones_too() -> None:
    assert make_mapper(row_key_prefix="hash:4").map(rec(None)) == RowDelete(b"b637k1", (b"cf",))
    assert make_mapper(row_key_prefix="salt:16").map(rec(None)) == RowDelete(b"09k1", (b"cf",))


def test_metadata_columns_exact_bytes() -> None:
    metadata = {
        "topic": "_t",
        "partition": "_p",
        "offset": "_o",
        "timestamp": "_ts",
        "headers": "_h",
        "s": "x",
    }
    mapper = make_mapper(metadata_columns={k: v for k, v in metadata.items() if k != "s"} | {"topic": "s"})
    headers = (("trace", b"abc"), ("bin", b"\xff\x00"), ("nil", None), ("uni", "é".encode()))
    record = KafkaRecord("events", 2, 7, b"k1", b'{"s": "field"}', headers, 1_700_000_000_000)
    assert mapper.map(record) == RowPut(
        b"k1",
        {
            b"cf:s": b"events",  # the metadata column overwrites the field of the same qualifier
            b"cf:_p": b"2",
            b"cf:_o": b"7",
            b"cf:_ts": b"1700000000000",
            b"cf:_h": '[["trace","abc"],["bin",{"base64":"/wA="}],["nil",null],["uni","é"]]'.encode(),
        },
    )
    bare = KafkaRecord("events", 0, 0, b"k1", b"{}", (), None)
    assert mapper.map(bare) == RowPut(
        b"k1", {b"cf:s": b"events", b"cf:_p": b"0", b"cf:_o": b"0", b"cf:_h": b"[]"}
    )


def test_metadata_columns_with_a_user_function() -> None:
    mapper = make_mapper(function="tests.unit.test_mapping:user_mapper", metadata_columns={"offset": "_o"})
    assert mapper.map(rec(b"p", offset=9)).cells[b"cf:_o"] == b"9"


def test_version_from_an_integer_field() -> None:
    mapper = make_mapper(version="field:order.updated_at", columns={"total": "order.total"})
    assert mapper.map(rec(ORDER_JSON)) == RowPut(b"k1", {b"cf:total": b"12.5"}, 1_700_000_000_123)
    assert make_mapper().map(rec(ORDER_JSON)).version is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b'{"v": 1}', "version field 'ts' is missing or null"),
        (b'{"ts": null}', "version field 'ts' is missing or null"),
        (b'{"ts": "17"}', "version field 'ts' is not an integer or a timestamp (got str)"),
        (b'{"ts": 1.5}', "version field 'ts' is not an integer or a timestamp (got float)"),
        (b'{"ts": true}', "version field 'ts' is not an integer or a timestamp (got bool)"),
        (b'{"ts": -1}', f"version field 'ts' is -1, outside 0..{2**63 - 1}"),
        (b'{"ts": 9223372036854775808}', f"version field 'ts' is {2**63}, outside 0..{2**63 - 1}"),
        (
            None,
            "a tombstone has no version field (mapping.version is 'field:ts'); declare "
            "mapping.tombstone_version: 'header:<name>' or 'key:<path>' to delete at that version",
        ),
    ],
)
def test_bad_version_fields(value: bytes | None, reason: str) -> None:
    with pytest.raises(BadRecord) as err:
        make_mapper(version="field:ts").map(rec(value))
    assert err.value.reason == reason


@pytest.mark.parametrize(
    ("value_format", "value", "cells"),
    [
        ("string", "hé".encode(), {b"cf:value": "hé".encode()}),
        ("bytes", b"\xff\x00", {b"cf:value": b"\xff\x00"}),
        ("bytes", b"", {b"cf:value": b""}),
    ],
)
def test_string_and_bytes_values_are_the_single_field_value(
    value_format: str, value: bytes, cells: dict[bytes, bytes]
) -> None:
    assert make_mapper(value_format=value_format).map(rec(value)) == RowPut(b"k1", cells)


def test_string_value_that_is_not_utf8_is_bad() -> None:
    with pytest.raises(BadRecord) as err:
        make_mapper(value_format="string").map(rec(b"\xff"))
    assert err.value.reason == (
        "value is not valid UTF-8 (format string): 'utf-8' codec can't decode byte 0xff in position 0: "
        "invalid start byte"
    )
