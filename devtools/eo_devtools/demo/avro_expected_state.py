"""An oracle for Avro pipelines (``value_format: avro``): what the declarative mapping must
write for each record, restated from the documented contract (docs/formats.md), independent
of the provider's decoders and mapper.

Decoding: the Confluent wire format (magic byte 0, a 4-byte big-endian schema id, the Avro
binary payload), decoded with fastavro against the *writer* schema the registry holds for
that id. Bad (a dead letter, or a failure under ``bad_records: fail``): no key, a key that is
not UTF-8 (``key_format: string``), a value shorter than the header or without the magic
byte, a schema id the registry does not know, or a payload that does not decode.

Mapping (``columns: {qualifier: dotted.path}``; ``None``: every top-level field under its
own name): one cell ``family:qualifier`` per column whose path the record has. A path the
record lacks (a field of the other schema version) writes no cell; a null writes ``null``.
Cell bytes: strings as UTF-8, ints in decimal, decimals as plain text keeping their scale (``12.50``),
timestamps as ISO-8601 UTC with ``Z`` and 6 fractional digits
(``2026-01-01T00:00:00.123000Z``). Row key: the Kafka key (``row_key: kafka_key``).
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import fastavro

from eo_devtools.demo.expected_state import ProducedRecord

HEADER_BYTES = 5


def schema_id_of(value: bytes | None) -> int | None:
    """The schema id of a Confluent wire-format value; None when ``value`` is not one."""
    if value is None or len(value) < HEADER_BYTES or value[0] != 0:
        return None
    return int.from_bytes(value[1:HEADER_BYTES], "big")


def decode_wire(value: bytes, schemas: Mapping[int, Any]) -> dict[str, Any]:
    """The record a wire-format value holds. Raises ValueError naming why it is bad."""
    schema_id = schema_id_of(value)
    if schema_id is None:
        raise ValueError("no magic byte")
    if schema_id not in schemas:
        raise ValueError(f"schema id {schema_id} unknown to the registry")
    try:
        decoded = fastavro.schemaless_reader(io.BytesIO(value[HEADER_BYTES:]), schemas[schema_id], None)
    except (EOFError, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"payload does not decode with schema id {schema_id}: {exc!r}") from exc
    if not isinstance(decoded, dict):
        raise ValueError(f"schema id {schema_id} is not a record schema")
    return decoded


def encode_cell(value: object) -> bytes:
    """Cell bytes of one mapped value (the documented encodings the demo uses).

    Raises ValueError for a type the demo's schemas never produce (no documented guess)."""
    if value is None:
        return b"null"
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value).encode()
    if isinstance(value, Decimal):
        return format(value, "f").encode()
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ").encode()
    raise ValueError(f"the Avro oracle has no encoding for {type(value).__name__} {value!r}")


_MISSING = object()


def _at(record: Mapping[str, Any], path: str) -> object:
    node: object = record
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


@dataclass(frozen=True)
class AvroOracle:
    """:class:`eo_devtools.demo.expected_state.RecordOracle` of an Avro pipeline.

    ``schemas``: parsed writer schema per schema id the registry knows
    (``eo_devtools.demo.registry_schemas.writer_schemas``)."""

    family: str
    columns: Mapping[str, str] | None
    schemas: Mapping[int, Any]

    def is_bad(self, record: ProducedRecord) -> bool:
        """Keyless, a key that is not UTF-8, or a value that does not decode."""
        if record.key is None:
            return True
        try:
            record.key.decode("utf-8")
        except UnicodeDecodeError:
            return True
        if record.value is None:
            return False
        try:
            decode_wire(record.value, self.schemas)
        except ValueError:
            return True
        return False

    def cells(self, record: ProducedRecord) -> dict[bytes, bytes]:
        """One cell per column whose path the record has."""
        assert record.value is not None
        decoded = decode_wire(record.value, self.schemas)
        columns = self.columns if self.columns is not None else {field: field for field in decoded}
        cells = {}
        for qualifier, path in columns.items():
            value = _at(decoded, path)
            if value is not _MISSING:
                cells[f"{self.family}:{qualifier}".encode()] = encode_cell(value)
        return cells
