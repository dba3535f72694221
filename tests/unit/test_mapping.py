"""Default JSON mapping, row key templates, user functions and bad records."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_eo.config.specs import HBASE_KEYVALUE_MAXSIZE, MappingSpec
from airflow_provider_eo.spark.records import KafkaRecord, RowDelete, RowPut
from airflow_provider_eo.spark.task.mapping import (
    BadRecord,
    RecordMapper,
    build_mapper,
    encode_value,
    load_function,
)


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
