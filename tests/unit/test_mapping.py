"""Default JSON mapping, row key templates, user functions and bad records."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_eo.config.specs import HBASE_KEYVALUE_MAXSIZE, MappingSpec
from airflow_provider_eo.spark.mapping import (
    BadRecord,
    RecordMapper,
    build_mapper,
    encode_value,
    load_function,
)
from airflow_provider_eo.spark.records import KafkaRecord, RowDelete, RowPut


def rec(value: bytes | None, key: bytes | None = b"k1", offset: int = 7) -> KafkaRecord:
    return KafkaRecord("events", 2, offset, key, value, (("h", b"1"),), 1_700_000_000_000)


def make_mapper(
    family: str = "cf", max_cell_bytes: int = HBASE_KEYVALUE_MAXSIZE, **mapping: Any
) -> RecordMapper:
    """The mapper of a ``mapping`` section with these fields (plain decoders)."""
    return build_mapper(MappingSpec(**mapping), family, max_cell_bytes=max_cell_bytes)


def user_mapper(record: KafkaRecord) -> dict[str, Any] | None:
    """A user mapping function used by the tests (importable as tests.unit.test_mapping:user_mapper)."""
    if record.value == b"delete":
        return None
    if record.value == b"boom":
        raise RuntimeError("cannot handle boom")
    if record.value == b"list":
        return ["not", "a", "dict"]  # type: ignore[return-value]
    return {"raw": record.value, "offset": record.offset, "other:col": "x", "user": "u7"}


NOT_CALLABLE = 42


def test_json_object_becomes_one_column_per_field_with_documented_encoding() -> None:
    value = {"s": "héllo", "i": 42, "f": 1.5, "t": True, "n": None, "o": {"a": [1, "x"]}, "l": []}
    mutation = make_mapper().map(rec(json.dumps(value).encode()))
    assert mutation == RowPut(
        b"k1",
        {
            b"cf:s": "héllo".encode(),
            b"cf:i": b"42",
            b"cf:f": b"1.5",
            b"cf:t": b"true",
            b"cf:n": b"null",
            b"cf:o": b'{"a":[1,"x"]}',
            b"cf:l": b"[]",
        },
    )


def test_encode_value() -> None:
    assert encode_value("ü") == "ü".encode()
    assert encode_value(b"\xff") == b"\xff"
    assert encode_value({"k": "ü"}) == '{"k":"ü"}'.encode()
    assert encode_value(False) == b"false"
    for value in (0, -17, 2**70, 1.5, -0.0, 1e-7, 1e300, 0.1 + 0.2, True, None, "x", [1.0, {"a": None}]):
        assert encode_value(value) == json.dumps(value, separators=(",", ":")).strip('"').encode()


def test_kafka_key_bytes_are_the_row_key_as_is() -> None:
    assert make_mapper().map(rec(b'{"a":1}', key=b"\x00\xffk")) == RowPut(b"\x00\xffk", {b"cf:a": b"1"})


def test_row_key_template_over_fields() -> None:
    mapper = make_mapper("d", row_key="{user_id}:{region}")
    mutation = mapper.map(rec(b'{"user_id": 17, "region": "eu", "x": "y"}', key=None))
    assert mutation == RowPut(b"17:eu", {b"d:user_id": b"17", b"d:region": b"eu", b"d:x": b"y"})


def test_tombstone_deletes_the_row_family() -> None:
    assert make_mapper().map(rec(None, key=b"k9")) == RowDelete(b"k9", (b"cf",))


def test_empty_object_is_a_put_without_cells() -> None:
    assert make_mapper().map(rec(b"{}")) == RowPut(b"k1", {})


@pytest.mark.parametrize(
    ("value", "key", "template", "reason"),
    [
        (b"\xff\xfe{}", b"k", None, "value is not valid UTF-8"),
        (b'{"a": ', b"k", None, "value is not valid JSON"),
        (b"NaN", b"k", None, "value is not valid JSON: non-standard JSON constant NaN"),
        (b'{"x": 1e400}', b"k", None, "value is not valid JSON: number 1e400 is out of range"),
        (b"[1, 2]", b"k", None, "JSON value is not an object (got list)"),
        (b'"text"', b"k", None, "JSON value is not an object (got str)"),
        (b'{"a": 1}', None, None, "record has no Kafka key, needed for the row key"),
        (b'{"a": 1}', b"", None, "record has no Kafka key, needed for the row key"),
        (None, None, None, "record has no Kafka key, needed for a tombstone"),
        (b'{"region": "eu"}', b"k", "{user_id}:{region}", "row key field 'user_id' is missing or null"),
        (b'{"user_id": null}', b"k", "{user_id}", "row key field 'user_id' is missing or null"),
        (None, b"k", "{user_id}", "a delete (tombstone) cannot derive its row key"),
    ],
)
def test_bad_records_raise_with_reason(
    value: bytes | None, key: bytes | None, template: str | None, reason: str
) -> None:
    with pytest.raises(BadRecord) as info:
        make_mapper(row_key=template or "kafka_key").map(rec(value, key=key))
    assert info.value.reason.startswith(reason)


def test_record_larger_than_max_record_bytes_is_bad() -> None:
    mapper = make_mapper(max_record_bytes=10)
    assert mapper.map(rec(b'{"a":"1"}', key=b"k")) == RowPut(b"k", {b"cf:a": b"1"})  # 1 + 9 = 10 bytes
    with pytest.raises(BadRecord, match=r"record is 11 bytes, larger than max_record_bytes=10"):
        mapper.map(rec(b'{"a":"12"}', key=b"k"))


def test_user_function_cells_delete_and_errors() -> None:
    mapper = make_mapper(function="tests.unit.test_mapping:user_mapper")
    assert mapper.map(rec(b"payload", offset=3)) == RowPut(
        b"k1", {b"cf:raw": b"payload", b"cf:offset": b"3", b"other:col": b"x", b"cf:user": b"u7"}
    )
    assert mapper.map(rec(b"delete")) == RowDelete(b"k1", (b"cf",))
    with pytest.raises(BadRecord, match=r"user_mapper raised RuntimeError: cannot handle boom"):
        mapper.map(rec(b"boom"))
    with pytest.raises(BadRecord, match=r"user_mapper returned list"):
        mapper.map(rec(b"list"))


def test_user_function_with_row_key_template_over_returned_cells() -> None:
    mapper = make_mapper(row_key="u-{user}", function="tests.unit.test_mapping:user_mapper")
    assert mapper.map(rec(b"p", key=None)).row == b"u-u7"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_colon", "must look like 'pkg.module:function'"),
        ("tests.unit.nonexistent_module:f", "cannot import mapping function"),
        ("tests.unit.test_mapping:missing", "cannot import mapping function"),
        ("tests.unit.test_mapping:NOT_CALLABLE", "is not callable"),
    ],
)
def test_load_function_errors_name_the_path(path: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_function(path)


@pytest.mark.parametrize("template", ["{a[0]}", "{a!r}", "{a:>5}", "{}", "no fields", "{a"])
def test_invalid_row_key_templates_are_rejected(template: str) -> None:
    with pytest.raises(ValueError, match="template"):
        make_mapper(row_key=template)


def stdlib_cells(value: bytes) -> dict[bytes, bytes] | str:
    """The mapping's documented encoding computed with the standard library only, or the error."""

    def finite(text: str) -> float:
        if abs(float(text)) == float("inf"):
            raise ValueError(text)
        return float(text)

    def reject(constant: str) -> None:
        raise ValueError(constant)

    try:
        fields = json.loads(value.decode("utf-8"), parse_constant=reject, parse_float=finite)
        if not isinstance(fields, dict):
            return "not an object"
        return {
            b"cf:" + k.encode(): v.encode() if isinstance(v, str)
            else json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()
            for k, v in fields.items()
        }  # fmt: skip
    except ValueError as exc:  # UnicodeError included
        return type(exc).__name__


TRICKY_JSON = [
    b'{"big":123456789012345678901234567890,"neg":-0.0,"e16":1e16,"tiny":5e-324,"third":0.1}',
    b'{"dup":1,"dup":"last wins"}',
    '{"u":"h\u00e9llo \u2028 \u00f1","esc":"tab\\tquote\\"nl\\n\\u0001"}'.encode(),
    b'{"nested":{"f":[1.5,2e-7,{"x":null}],"b":true},"empty":{},"list":[]}',
    b'{"lone":"\\ud800"}',
    b'\xef\xbb\xbf{"bom":1}',
    b'{"bad utf8":"\xff"}',
    b'{"nan":NaN}',
    b'{"inf":1e999}',
    b"[1,2]",
    b'  {"spaces":  1 }  ',
]


@pytest.mark.parametrize("value", TRICKY_JSON)
def test_fast_json_path_gives_the_standard_librarys_cells_or_rejects_the_same_records(value: bytes) -> None:
    expected = stdlib_cells(value)
    try:
        mutation = make_mapper().map(rec(value))
    except BadRecord:
        assert isinstance(expected, str), f"{value!r} is valid for the standard library: {expected!r}"
        return
    assert mutation == RowPut(b"k1", expected)


def test_cell_larger_than_keyvalue_maxsize_is_bad_and_names_the_cell() -> None:
    # HBase counts a cell as 20 bytes + row + family + qualifier + value: here 20 + 2 + 2 + 1 + value
    limit = 1000
    mapper = make_mapper(max_cell_bytes=limit)
    fits = json.dumps({"a": "x" * (limit - 25)}).encode()
    assert mapper.map(rec(fits)) == RowPut(b"k1", {b"cf:a": b"x" * (limit - 25)})
    too_big = json.dumps({"a": "x" * (limit - 24), "b": 1}).encode()
    with pytest.raises(BadRecord) as err:
        mapper.map(rec(too_big))
    assert err.value.reason == (
        "cell 'cf:a' is 1001 bytes as an HBase cell (row, column and value), "
        "larger than hbase.keyvalue_maxsize=1000"
    )


def test_user_function_cells_are_checked_against_keyvalue_maxsize_too() -> None:
    mapper = make_mapper(function="tests.unit.test_mapping:user_mapper", max_cell_bytes=60)
    with pytest.raises(BadRecord, match="cell 'cf:raw' is 63 bytes as an HBase cell"):
        mapper.map(rec(b"r" * 36))  # 20 + len(b"k1") + len(b"cfraw") + 36 = 63 > 60


@pytest.mark.parametrize("value", [b'{"a":1}', None], ids=["put", "tombstone"])
def test_row_key_longer_than_hbase_allows_is_bad(value: bytes | None) -> None:
    mapper = make_mapper()
    assert mapper.map(rec(value, key=b"k" * 32_767)) is not None
    with pytest.raises(BadRecord) as err:
        mapper.map(rec(value, key=b"k" * 32_768))
    assert err.value.reason == "row key is 32768 bytes, longer than HBase's limit of 32767"


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
        (None, "a tombstone has no version field (mapping.version is 'field:ts')"),
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
