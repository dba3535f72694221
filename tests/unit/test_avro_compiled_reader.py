"""The compiled Avro reader (formats/registry/avro_compiled_reader.py) against fastavro itself:
the same values for every type, fields outside a selection left out, and bad payloads
failing through AvroDecoder exactly as fastavro's path fails them."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import uuid
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.common.avro import parse_schema_with_repo
from fastavro import schemaless_reader, schemaless_writer

from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.registry.avro_compiled_reader import compile_reader
from airflow_provider_eo.formats.registry.avro_decoder import AvroDecoder
from airflow_provider_eo.formats.registry.schema_cache import SchemaCache

ROW = {
    "type": "record",
    "name": "Row",
    "namespace": "t",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "double"]}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {
            "name": "nested",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Inner",
                    "fields": [
                        {"name": "x", "type": "int"},
                        {"name": "y", "type": ["null", "string"]},
                        {"name": "z", "type": "boolean"},
                    ],
                },
            ],
        },
        {"name": "other", "type": ["null", "Inner"]},
        {"name": "choice", "type": ["null", "string", "long", "Inner"]},
        {"name": "f32", "type": "float"},
        {"name": "raw", "type": "bytes"},
        {"name": "nothing", "type": "null"},
    ],
}
LOGICAL = {
    "type": "record",
    "name": "Logical",
    "fields": [
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tmu", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {
            "name": "decf",
            "type": {
                "type": "fixed",
                "name": "D",
                "size": 6,
                "logicalType": "decimal",
                "precision": 12,
                "scale": 3,
            },
        },
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "maybe", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
        {"name": "odd", "type": {"type": "string", "logicalType": "no-such-type"}},
    ],
}
LIST = {
    "type": "record",
    "name": "Node",
    "fields": [{"name": "value", "type": "int"}, {"name": "next", "type": ["null", "Node"]}],
}


def row(i: int, **more: Any) -> dict[str, Any]:
    inner = {"x": -i, "y": None if i % 2 else f"y{i}", "z": bool(i % 3)}
    value = {
        "id": (-1) ** i * 7 ** (i % 22),  # up to 7**21 < 2**63: multi-byte varints
        "name": f"ñame-{i}" * (i % 4),
        "tags": [f"t{j}" for j in range(i % 3)],
        "attrs": {f"k{j}": (None if j % 2 else j / 3) for j in range(i % 4)},
        "kind": "ABC"[i % 3],
        "hash": bytes([i, 1, 2, 255]),
        "nested": None if i % 5 == 0 else inner,
        "other": inner if i % 2 else None,
        "choice": [None, f"s{i}", i * 1000, inner][i % 4],
        "f32": 1.5 * i,
        "raw": bytes(range(i % 7)),
        "nothing": None,
    }
    return {**value, **more}


def parsed(schema: dict[str, Any]) -> Any:
    return parse_schema_with_repo(json.dumps(schema), {})


def payload(schema: Any, value: Any) -> bytes:
    out = io.BytesIO()
    out.write(b"\x00\x00\x00\x00\x01")
    schemaless_writer(out, schema, value)
    return out.getvalue()


def fastavro_value(schema: Any, data: bytes) -> Any:
    buffer = io.BytesIO(data)
    buffer.seek(5)
    return schemaless_reader(buffer, schema, None, False)


def read_all(schema: Any, data: bytes, selection: Any = None) -> Any:
    reader = compile_reader(schema, selection)
    assert reader is not None
    value, end = reader(data, 5)
    assert end == len(data)
    return value


def test_every_type_reads_as_fastavro_reads_it() -> None:
    schema = parsed(ROW)
    for i in range(24):
        data = payload(schema, row(i))
        assert read_all(schema, data) == fastavro_value(schema, data) == row(i)


def test_logical_types_go_through_fastavros_own_readers() -> None:
    schema = parsed(LOGICAL)
    value = {
        "ts": dt.datetime(2026, 11, 29, 7, 30, 1, 250000, tzinfo=dt.UTC),
        "tsu": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
        "local": dt.datetime(2026, 1, 2, 3, 4, 5, 6000),
        "day": dt.date(2026, 11, 29),
        "tm": dt.time(12, 30, 0, 125000),
        "tmu": dt.time(23, 59, 59, 999999),
        "dec": Decimal("-1234567.89"),
        "decf": Decimal("123456789.012"),
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "maybe": dt.datetime(2020, 2, 29, tzinfo=dt.UTC),
        "odd": "kept as text",
    }
    data = payload(schema, value)
    decoded = read_all(schema, data)
    assert decoded == fastavro_value(schema, data)
    assert decoded["ts"] == value["ts"] and decoded["dec"] == Decimal("-1234567.89")
    assert [type(decoded[name]).__name__ for name in ("ts", "day", "tm", "decf", "id", "odd")] == [
        "datetime",
        "date",
        "time",
        "Decimal",
        "UUID",
        "str",
    ]


def test_a_recursive_type_reads_whole_and_through_a_selection() -> None:
    schema = parsed(LIST)
    value = {"value": 1, "next": {"value": 2, "next": {"value": 3, "next": None}}}
    data = payload(schema, value)
    assert read_all(schema, data) == value
    assert read_all(schema, data, {"next": {"next": {"value": None}}}) == {"next": {"next": {"value": 3}}}


def test_a_selection_keeps_exactly_what_it_names_at_every_depth() -> None:
    schema = parsed(ROW)
    data = payload(schema, row(7))  # nested and other present, choice the Inner record
    full = fastavro_value(schema, data)
    selection = {
        "id": None,
        "nested": {"y": None},
        "other": None,
        "choice": {"z": None},
        "attrs": {"k0": None},
    }
    assert read_all(schema, data, selection) == {
        "id": full["id"],
        "attrs": full["attrs"],  # a map on the path is kept whole
        "nested": {"y": full["nested"]["y"]},  # through a nullable union
        "other": full["other"],  # the same named type, whole at another position
        "choice": {"z": full["choice"]["z"]},  # the record branch of a 4-branch union
    }
    data = payload(schema, row(20))  # nested null, choice None
    assert read_all(schema, data, {"nested": {"x": None}, "choice": {"z": None}}) == {
        "nested": None,
        "choice": None,
    }
    assert read_all(schema, data, {}) == {}


def test_other_fields_keep_every_key_with_the_selection_they_map_to() -> None:
    schema = parsed(ROW)
    data = payload(schema, row(7))
    full = fastavro_value(schema, data)
    value = read_all(schema, data, {"id": None, "*": {}})
    assert list(value) == list(full)  # the same keys, in writer order
    assert value["id"] == full["id"] and value["tags"] == full["tags"] and value["name"] == full["name"]
    assert value["nested"] == {} and value["other"] == {} and value["choice"] == {}


def test_negative_block_counts_read_as_fastavro_reads_them() -> None:
    schema = parsed(
        {
            "type": "record",
            "name": "B",
            "fields": [
                {"name": "items", "type": {"type": "array", "items": "long"}},
                {"name": "map", "type": {"type": "map", "values": "string"}},
                {"name": "tail", "type": "string"},
            ],
        }
    )
    # items: block of -2 (byte size 2) [1, 2], then 0; map: block of -1 (size 3) {"a": "b"}, then 0
    data = b"\x00\x00\x00\x00\x01" + b"\x03\x04\x02\x04\x00" + b"\x01\x06\x02a\x02b\x00" + b"\x02z"
    assert (
        read_all(schema, data)
        == fastavro_value(schema, data)
        == {"items": [1, 2], "map": {"a": "b"}, "tail": "z"}
    )
    assert read_all(schema, data, {"tail": None}) == {"tail": "z"}


def test_a_schema_with_a_type_it_does_not_know_is_left_to_fastavro() -> None:
    assert (
        compile_reader({"type": "record", "name": "X", "fields": [{"name": "a", "type": "t.Missing"}]})
        is None
    )


def decoder(
    schema: Any, selection: Any, schema_id: int = 1, more: dict[int, Any] | None = None
) -> AvroDecoder:
    """An AvroDecoder whose cache already holds the parsed schemas (no registry is asked)."""
    cache = SchemaCache(SchemaRegistryClient({"url": "http://127.0.0.1:9"}))
    for sid, known in {schema_id: schema, **(more or {})}.items():
        cache.parsed(sid, "avro", lambda known=known: known)
    return AvroDecoder("value", cache, selection)


def bad_reason(decode: AvroDecoder, data: bytes) -> str:
    """The BadRecord's reason, fastavro's buffer address (``<_io.BytesIO object at 0x..>``) cut."""
    with pytest.raises(BadRecord) as caught:
        decode(data)
    return re.sub(r" at 0x[0-9a-f]+", "", str(caught.value))


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda data: data[:-3], id="truncated"),
        pytest.param(lambda data: data + b"\x00", id="bytes-left"),
        pytest.param(
            lambda data: data.replace("ñame".encode(), b"\xff\xfeme"), id="bad-utf8-in-a-skipped-field"
        ),
        pytest.param(lambda data: data.replace(b"\x02\x04s1", b"\x0e\x04s1"), id="bad-union-index"),
    ],
)
def test_a_bad_payload_fails_with_or_without_a_selection_as_fastavro_fails_it(mangle: Any) -> None:
    schema = parsed(ROW)
    data = mangle(payload(schema, row(1)))
    assert data != payload(schema, row(1))
    whole = bad_reason(decoder(schema, None), data)
    assert bad_reason(decoder(schema, {"id": None}), data) == whole
    assert whole.startswith("value: avro payload of schema id 1 ")


def test_a_bad_enum_index_in_a_skipped_field_is_still_bad() -> None:
    schema = parsed(
        {
            "type": "record",
            "name": "E",
            "fields": [
                {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
                {"name": "id", "type": "long"},
            ],
        }
    )
    data = b"\x00\x00\x00\x00\x01" + b"\x08\x02"  # index 4 of 2 symbols
    whole = bad_reason(decoder(schema, None), data)
    assert bad_reason(decoder(schema, {"id": None}), data) == whole
    assert "does not decode" in whole


def test_writer_versions_each_read_with_the_same_selection() -> None:
    v1 = parsed(
        {
            "type": "record",
            "name": "O",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "legacy", "type": "string"},
                {"name": "n", "type": "int"},
            ],
        }
    )
    v2 = parsed(
        {
            "type": "record",
            "name": "O",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "n", "type": "int"},
                {"name": "note", "type": ["null", "string"], "default": None},
            ],
        }
    )
    decode = decoder(v1, {"id": None, "note": None}, more={2: v2})
    first = payload(v1, {"id": 1, "legacy": "x", "n": 5})
    second = b"\x00\x00\x00\x00\x02" + payload(v2, {"id": 2, "n": 6, "note": "hi"})[5:]
    assert decode(first) == {"id": 1}  # v1 has no note: absent, as fastavro's v1 value lacks it
    assert decode(second) == {"id": 2, "note": "hi"}
    assert decode(bytearray(second)) == {"id": 2, "note": "hi"}  # Spark hands bytearrays
