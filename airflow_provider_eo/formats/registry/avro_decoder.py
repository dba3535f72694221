"""Avro in the Confluent wire format -> plain Python values, with the writer's schema.

The writer schema (the one whose id the record carries) is parsed once per schema id
exactly as confluent-kafka 2.16.1's ``AvroDeserializer`` parses it (its
``_resolve_named_schema`` for schema references, then ``parse_schema_with_repo``). Each
payload is read by a reader compiled once per schema id from that parsed schema and the
decoder's field selection (:mod:`.avro_compiled_reader`: the values fastavro's
``schemaless_reader`` gives, minus the fields the selection leaves out, in about half its
time, or a third with an envelope's unread fields skipped). A payload the compiled reader
does not read to its end is read again with ``schemaless_reader``, the call confluent-kafka's
deserializer makes, whose value or error is the answer: bad payloads fail exactly as they
did. The deserializer itself is not called per record: with no reader schema and no rules
its remaining per-record work (rule hooks, ``expand_schema`` of the whole schema) changes
nothing and tripled the decode time (44 us vs 15 us per record, measured).

Values (fastavro's): record -> dict, array -> list, map -> dict, enum -> its symbol (str),
fixed/bytes -> bytes, union -> the branch's value; logical types: ``timestamp-millis`` /
``timestamp-micros`` -> tz-aware UTC ``datetime``, ``local-timestamp-*`` -> naive
``datetime``, ``date`` -> ``date``, ``time-millis`` / ``time-micros`` -> ``time``,
``decimal`` -> ``Decimal``, ``uuid`` -> ``UUID``.

A top-level ``bytes`` schema is the raw payload, as confluent-kafka writes and reads it.
A payload that does not decode, or leaves bytes unread after the record, is a BadRecord
naming the part, the format and the schema id.
"""

from __future__ import annotations

import io
from typing import Any, cast

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry._sync.avro import _resolve_named_schema
from confluent_kafka.schema_registry.common.avro import _schema_loads, parse_schema_with_repo
from fastavro import schemaless_reader

from airflow_provider_eo.errors import BadRecord, RegistryAccessError, error_text
from airflow_provider_eo.formats.field_selection import FieldSelection
from airflow_provider_eo.formats.registry.avro_compiled_reader import Reader, compile_reader
from airflow_provider_eo.formats.registry.schema_cache import SchemaCache
from airflow_provider_eo.formats.registry.wire_format import HEADER_BYTES, schema_id_of

AVRO_TYPES = (None, "", "AVRO")


class AvroDecoder:
    """``decode(data) -> value`` for one part (``"value"``/``"key"``) of a pipeline's records.

    ``fields`` (None: every field) is what the consumer of the values can reach; the values
    may lack every field outside it (``formats.field_selection``), never one inside it.
    """

    def __init__(self, part: str, cache: SchemaCache, fields: FieldSelection = None) -> None:
        self.part = part
        self.cache = cache
        self.fields = fields
        # schema id -> (parsed, top-level bytes, compiled reader or None)
        self._schemas: dict[int, tuple[Any, bool, Reader | None]] = {}

    def __call__(self, data: bytes) -> Any:
        schema_id = schema_id_of(data, self.part)
        known = self._schemas.get(schema_id)
        if known is None:
            known = self._schemas[schema_id] = self._reader(schema_id)
        parsed, raw, compiled = known
        if raw:
            return data[HEADER_BYTES:]  # as confluent-kafka writes a top-level bytes schema: raw
        if compiled is not None:
            payload = data if type(data) is bytes else bytes(data)
            try:
                value, end = compiled(payload, HEADER_BYTES)
            except Exception:  # anything unexpected: fastavro reads it below
                pass
            else:
                if end == len(payload):
                    return value
        return self._read_with_fastavro(schema_id, parsed, data)

    def _read_with_fastavro(self, schema_id: int, parsed: Any, data: bytes) -> Any:
        """fastavro's value of the payload; BadRecord when it does not decode to its end."""
        buffer = io.BytesIO(data)
        buffer.seek(HEADER_BYTES)
        try:
            value = schemaless_reader(buffer, parsed, None, False)
        except Exception as exc:  # fastavro raises EOFError, ValueError, IndexError, ... on bad bytes
            early = " (it ends before the record does)" if buffer.tell() >= len(data) else ""
            raise BadRecord(
                f"{self.part}: avro payload of schema id {schema_id} does not decode{early}: "
                f"{error_text(exc)}"
            ) from None
        left = len(data) - buffer.tell()
        if left:
            raise BadRecord(
                f"{self.part}: avro payload of schema id {schema_id} has {left} bytes left after the record"
            )
        return value

    def _reader(self, schema_id: int) -> tuple[Any, bool, Reader | None]:
        parsed = self.cache.parsed(schema_id, "avro", lambda: self._parse(schema_id))
        raw = parsed == "bytes" or (isinstance(parsed, dict) and parsed.get("type") == "bytes")
        return parsed, raw, None if raw else compile_reader(parsed, self.fields)

    def _parse(self, schema_id: int) -> Any:
        schema = self.cache.schema(schema_id, self.part)
        if schema.schema_type not in AVRO_TYPES:
            raise BadRecord(
                f"{self.part}: schema id {schema_id} is a {schema.schema_type} schema, "
                f"the pipeline's {self.part} format is avro"
            )
        return parse_avro_schema(schema, self.cache, f"{self.part}: schema id {schema_id}")


def parse_avro_schema(schema: Schema, cache: SchemaCache, where: str) -> Any:
    """The fastavro-parsed form of a registered Avro schema, references resolved through ``cache``.

    Raises BadRecord (prefixed with ``where``) when the registry's schema does not parse.
    """
    try:
        named = _resolve_named_schema(schema, cast(SchemaRegistryClient, cache))
        prepared = _schema_loads(schema.schema_str or "")
        return parse_schema_with_repo(prepared.schema_str or "", named_schemas=named)
    except (BadRecord, RegistryAccessError):
        raise
    except Exception as exc:  # SchemaParseException, ValueError, KeyError, ...
        raise BadRecord(f"{where}: the registry's Avro schema does not parse: {exc}") from None
