"""The Avro demo's schemas in the stack's Schema Registry (confluent-kafka's client).

:func:`registered_serializers` registers the ``Order`` schema v1, sets the subject's
compatibility to BACKWARD explicitly, registers v2 (the registry checks it against v1), and
returns one ``AvroSerializer`` per version that serializes against exactly the registered id
(``auto.register.schemas`` off). :func:`writer_schemas` fetches, for the verification, the
writer schema of every schema id the topic's records name; an id the registry does not know
(404) is left out, which makes those records bad for the oracle.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import fastavro
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from eo_devtools.demo.avro_events import SCHEMA_V1, SCHEMA_V2, value_subject
from eo_devtools.demo.avro_expected_state import schema_id_of
from eo_devtools.demo.expected_state import ProducedRecord

Serialize = Callable[[dict[str, Any]], bytes]


def registered_serializers(client: SchemaRegistryClient, topic: str) -> tuple[Serialize, Serialize]:
    """Register v1, set BACKWARD, register v2 (idempotent: a registered schema keeps its id);
    the v1 and v2 serializers for ``topic``'s values.

    Raises ``SchemaRegistryError`` when the registry refuses a step (v2 incompatible with v1
    included), RuntimeError when a serializer's id differs from the registered one.
    """
    subject = value_subject(topic)
    v1_id = client.register_schema(subject, Schema(json.dumps(SCHEMA_V1), "AVRO"))
    client.set_compatibility(subject, "BACKWARD")
    v2_id = client.register_schema(subject, Schema(json.dumps(SCHEMA_V2), "AVRO"))
    return _serializer(client, topic, SCHEMA_V1, v1_id), _serializer(client, topic, SCHEMA_V2, v2_id)


def _serializer(
    client: SchemaRegistryClient, topic: str, schema: dict[str, Any], schema_id: int
) -> Serialize:
    conf = {"auto.register.schemas": False, "use.latest.version": False}
    serializer = AvroSerializer(client, json.dumps(schema), conf=conf)
    context = SerializationContext(topic, MessageField.VALUE)

    def serialize(order: dict[str, Any]) -> bytes:
        data = serializer(order, context)
        if data is None or schema_id_of(data) != schema_id:
            raise RuntimeError(f"{value_subject(topic)}: serialized with schema id other than {schema_id}")
        return data

    return serialize


def writer_schemas(client: SchemaRegistryClient, records: Iterable[ProducedRecord]) -> dict[int, Any]:
    """Parsed writer schema of each schema id the records' values name (ids unknown to the
    registry left out). Raises ``SchemaRegistryError`` for any answer but a schema or a 404."""
    ids = {schema_id_of(r.value) for r in records if r.value is not None} - {None}
    schemas: dict[int, Any] = {}
    for schema_id in sorted(i for i in ids if i is not None):
        try:
            schema = client.get_schema(schema_id)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:
                continue
            raise
        schemas[schema_id] = fastavro.parse_schema(json.loads(schema.schema_str or ""))
    return schemas
