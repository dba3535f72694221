"""The records of tests/integration/test_registry_spark.py: one subject's two schema versions
per format (Protobuf as ``.proto`` text, JSON Schema), the 17 values of a format's topic (good
records of both versions interleaved on three keys, then an unknown schema id, a payload cut
short, the other format's schema id, no magic byte) and the cells a write of them leaves."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from google.protobuf import descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from tests.protobuf_text_schemas import compiled_files

UNKNOWN_ID = 2_000_000_000
READING_V1 = (
    'syntax = "proto3";\npackage eo.reg;\n\nmessage Reading {\n  string name = 1;\n  int64 count = 2;\n}\n'
)
READING_V2 = READING_V1.replace("  int64 count = 2;\n", "  int64 count = 2;\n  double level = 3;\n")
JSON_V1 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Reading",
    "type": "object",
    "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["name", "count"],
    "additionalProperties": False,  # closed: adding a property is then BACKWARD compatible
}
JSON_V2 = {**JSON_V1, "properties": {**JSON_V1["properties"], "level": {"type": "number"}}}  # type: ignore[dict-item]
COLUMNS = {"name": "name", "count": "count", "level": "level"}
#: (offset, key, version, count, level) of the good records; v1 records have no level.
GOOD = [
    (0, "a", 1, 0, None), (1, "b", 1, 1, None), (2, "c", 1, 2, None), (3, "a", 1, 3, None),
    (4, "b", 1, 4, None), (5, "c", 1, 5, None), (6, "a", 1, 6, None), (7, "b", 1, 7, None),
    (8, "a", 2, 8, 0.5), (9, "b", 1, 9, None), (11, "c", 2, 11, 1.25), (15, "b", 2, 15, 2.0),
    (16, "a", 1, 16, None),
]  # fmt: skip
UNKNOWN, TRUNCATED, OTHER_FORMAT, NO_MAGIC = 10, 12, 13, 14
RECORDS = 17
FIRST_V2 = 8
OUTAGE_TIMEOUT_S = 2


def proto_class(text: str, name: str) -> Any:
    """The ``eo.reg.Reading`` class a producer would generate from ``text``."""
    pool = descriptor_pool.DescriptorPool()
    for file in compiled_files({name: text}):
        pool.Add(file)
    return GetMessageClass(pool.FindMessageTypeByName("eo.reg.Reading"))


def registered(client: SchemaRegistryClient, subject: str, v1: Schema, v2: Schema) -> tuple[int, int]:
    """v1, BACKWARD (set explicitly: registries' defaults differ), then v2; their ids."""
    first = client.register_schema(subject, v1)
    client.set_compatibility(subject, "BACKWARD")
    return first, client.register_schema(subject, v2)


def topic_values(encode: Callable[[int, str, int, float | None], bytes], other_id: int) -> list[bytes]:
    """The 17 values of a format's topic (module docstring); ``encode(version, name, count, level)``."""
    values: dict[int, bytes] = {o: encode(v, k, c, level) for o, k, v, c, level in GOOD}
    values[UNKNOWN] = b"\x00" + UNKNOWN_ID.to_bytes(4, "big") + values[0][5:]
    values[TRUNCATED] = values[11][:-3]
    values[OTHER_FORMAT] = b"\x00" + other_id.to_bytes(4, "big") + values[0][5:]
    values[NO_MAGIC] = b'{"name": "c", "count": 14}'
    return [values[o] for o in range(RECORDS)]


def keys() -> list[bytes]:
    by_offset = {o: k for o, k, *_ in GOOD}
    return [by_offset.get(o, "x").encode() for o in range(RECORDS)]


def cell_value(value: Any) -> bytes:
    """How the mapping writes a decoded scalar: str as UTF-8, numbers in JSON."""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


def expected_cells(upto: int = RECORDS) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
    """Visible cells after the good records at offsets below ``upto``: each cell's version
    is its record's offset; a v1 record writes no ``level`` (a put never deletes it)."""
    rows: dict[bytes, dict[bytes, tuple[bytes, int]]] = {}
    for offset, key, _version, count, level in GOOD:
        if offset >= upto:
            break
        cells = {b"d:name": (cell_value(key), offset), b"d:count": (cell_value(count), offset)}
        if level is not None:
            cells[b"d:level"] = (cell_value(level), offset)
        rows.setdefault(key.encode(), {}).update(cells)
    return rows
