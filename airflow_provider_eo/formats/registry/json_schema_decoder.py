"""JSON Schema records in the Confluent wire format -> plain Python values, validated.

The payload is JSON text after the 5-byte header. As confluent-kafka 2.16.1's
``JSONDeserializer`` does (with its default ``validate: True``), the decoded document is
validated against the writer's schema: the validator (``jsonschema.validators.validator_for``
the schema's dialect, the schema checked once) is built once per schema id, with schema
references resolved through the registry by confluent's ``_resolve_named_schema``. Unlike the
deserializer, a ``$ref`` to an outside URL is never fetched at run time (an empty
``referencing.Registry`` is its base): executors make no calls beyond the registry.

JSON has no logical types: strings stay strings whatever their ``format``
(``date-time`` included); numbers are ``int`` or ``float`` as written.
A payload that is not JSON, or not valid against the schema, is a BadRecord naming the
part, the format and the schema id (and, for validation, the failing path).
"""

from __future__ import annotations

import json
from typing import Any, cast

import msgspec
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry._sync.json_schema import _resolve_named_schema
from jsonschema import ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry

from airflow_provider_eo.errors import BadRecord, RegistryAccessError
from airflow_provider_eo.formats.registry.schema_cache import SchemaCache
from airflow_provider_eo.formats.registry.wire_format import HEADER_BYTES, schema_id_of

_decode_json = msgspec.json.Decoder().decode


class JsonSchemaDecoder:
    """``decode(data) -> value`` for one part (``"value"``/``"key"``) of a pipeline's records."""

    def __init__(self, part: str, cache: SchemaCache) -> None:
        self.part = part
        self.cache = cache
        self._validators: dict[int, Validator] = {}

    def __call__(self, data: bytes) -> Any:
        schema_id = schema_id_of(data, self.part)
        validator = self._validators.get(schema_id)
        if validator is None:
            validator = self._validators[schema_id] = self.cache.parsed(
                schema_id, "json_schema", lambda: self._validator(schema_id)
            )
        payload = data[HEADER_BYTES:]
        try:
            value = _decode_json(payload)
        except (msgspec.MsgspecError, ValueError):
            value = self._stdlib_decode(payload, schema_id)
        try:
            validator.validate(value)
        except ValidationError as exc:
            path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            raise BadRecord(
                f"{self.part}: json_schema payload of schema id {schema_id} is not valid against its schema "
                f"at {path}: {exc.message}"
            ) from None
        return value

    def _stdlib_decode(self, payload: bytes, schema_id: int) -> Any:
        try:
            return json.loads(payload.decode("utf-8"))
        except ValueError as exc:  # UnicodeDecodeError included
            raise BadRecord(
                f"{self.part}: json_schema payload of schema id {schema_id} is not JSON: {exc}"
            ) from None

    def _validator(self, schema_id: int) -> Validator:
        where = f"{self.part}: schema id {schema_id}"
        schema = self.cache.schema(schema_id, self.part)
        if schema.schema_type != "JSON":
            raise BadRecord(
                f"{where} is a {schema.schema_type or 'AVRO'} schema, the pipeline's {self.part} "
                "format is json_schema"
            )
        try:
            registry = _resolve_named_schema(schema, cast(SchemaRegistryClient, self.cache), Registry())
            document = json.loads(schema.schema_str or "")
            cls = validator_for(document)
            cls.check_schema(document)
            return cast(Validator, cls(document, registry=registry))
        except RegistryAccessError:
            raise
        except Exception as exc:  # SchemaError, a bad reference, not JSON, ...
            raise BadRecord(f"{where}: the registry's JSON Schema does not load: {exc}") from None
