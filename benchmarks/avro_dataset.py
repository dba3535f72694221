"""The write dataset's records in Avro: the same keys and fields, in the Confluent wire format.

:data:`EVENT_SCHEMA` restates :func:`benchmarks.dataset.event_fields` field for field with
the types JSON gives them (strings stay strings, ``ts`` included; ``user_id`` a long,
``amount`` a double, ``consent`` a boolean, ``device`` a nested record), so both topics carry
the same records and the ratio measures the format alone. The schema is registered under the
topic's value subject (TopicNameStrategy) with compatibility set explicitly (BACKWARD), and
values are serialized with confluent-kafka's ``AvroSerializer`` against that id.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from benchmarks.dataset import Dataset, event_fields, produce_dataset

EVENT_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Event",
    "namespace": "eo.bench",
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "user_id", "type": "long"},
        {"name": "type", "type": "string"},
        {"name": "url", "type": "string"},
        {"name": "ts", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "consent", "type": "boolean"},
        {"name": "session", "type": "string"},
        {
            "name": "device",
            "type": {
                "type": "record",
                "name": "Device",
                "fields": [
                    {"name": "os", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "country", "type": "string"},
                ],
            },
        },
    ],
}


def avro_event(serialize: Callable[[dict[str, Any]], bytes]) -> Callable[[int], tuple[bytes, bytes]]:
    """``i -> (key, value)``: :func:`benchmarks.dataset.event_fields` serialized by ``serialize``."""

    def make(i: int) -> tuple[bytes, bytes]:
        key, fields = event_fields(i)
        return key, serialize(fields)

    return make


def registered_serializer(client: SchemaRegistryClient, topic: str) -> Callable[[dict[str, Any]], bytes]:
    """Register :data:`EVENT_SCHEMA` under ``<topic>-value``, set BACKWARD, and return a
    serializer writing that schema's id. Raises ``SchemaRegistryError`` when the registry refuses."""
    subject = f"{topic}-value"
    client.register_schema(subject, Schema(json.dumps(EVENT_SCHEMA), "AVRO"))
    client.set_compatibility(subject, "BACKWARD")
    conf = {"auto.register.schemas": False, "use.latest.version": False}
    serializer = AvroSerializer(client, json.dumps(EVENT_SCHEMA), conf=conf)
    context = SerializationContext(topic, MessageField.VALUE)

    def serialize(fields: dict[str, Any]) -> bytes:
        data = serializer(fields, context)
        assert data is not None  # only None for a None value
        return data

    return serialize


def produce_avro_dataset(bootstrap: str, registry_url: str, records: int, partitions: int) -> Dataset:
    """A fresh topic with the dataset's ``records`` records in Avro (see the module)."""
    topic = f"bench-avro-{uuid.uuid4().hex[:10]}"
    serialize = registered_serializer(SchemaRegistryClient({"url": registry_url}), topic)
    return produce_dataset(bootstrap, records, partitions, topic=topic, make=avro_event(serialize))


def delete_subject(registry_url: str, topic: str) -> None:
    """Delete the topic's value subject (a subject left behind is logged, not fatal)."""
    try:
        SchemaRegistryClient({"url": registry_url}).delete_subject(f"{topic}-value")
    except Exception as exc:
        logging.getLogger(__name__).warning("benchmark subject %s-value not deleted: %s", topic, exc)
