"""The write dataset's records as Debezium change events in Avro: the same rows, enveloped.

Each record ``i`` is an update event (``op: u``; every 10th a create) whose ``after`` image
is :func:`benchmarks.dataset.event_fields` ``i`` in :data:`benchmarks.avro_dataset.EVENT_SCHEMA`,
``before`` null, and a PostgreSQL-shaped ``source`` block with ``lsn`` = 1000 + i (so each
record has its own log position). Registered and serialized as :mod:`benchmarks.avro_dataset`
does; the key is the plain dataset's key.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from benchmarks.avro_dataset import EVENT_SCHEMA
from benchmarks.dataset import Dataset, event_fields, produce_dataset

SOURCE_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Source",
    "namespace": "io.debezium.connector.postgresql",
    "fields": [
        {"name": "version", "type": "string"},
        {"name": "connector", "type": "string"},
        {"name": "name", "type": "string"},
        {"name": "ts_ms", "type": "long"},
        {"name": "db", "type": "string"},
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        {"name": "txId", "type": ["null", "long"], "default": None},
        {"name": "lsn", "type": ["null", "long"], "default": None},
    ],
}
ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Envelope",
    "namespace": "bench.public.events",
    "fields": [
        {"name": "before", "type": ["null", EVENT_SCHEMA], "default": None},
        {"name": "after", "type": ["null", "eo.bench.Event"], "default": None},
        {"name": "source", "type": SOURCE_SCHEMA},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
}
FIRST_LSN = 1000


def change_event(i: int) -> dict[str, Any]:
    """The ``i``-th record's envelope (see the module)."""
    _, fields = event_fields(i)
    lsn = FIRST_LSN + i
    source = {"version": "2.7.0.Final", "connector": "postgresql", "name": "bench",
              "ts_ms": 1_767_225_600_000 + i, "db": "bench", "schema": "public", "table": "events",
              "txId": lsn, "lsn": lsn}  # fmt: skip
    return {"before": None, "after": fields, "source": source, "op": "c" if i % 10 == 0 else "u",
            "ts_ms": source["ts_ms"]}  # fmt: skip


def registered_envelope_serializer(
    client: SchemaRegistryClient, topic: str
) -> Callable[[dict[str, Any]], bytes]:
    """Register :data:`ENVELOPE_SCHEMA` under ``<topic>-value`` (BACKWARD) and return its serializer.
    Raises ``SchemaRegistryError`` when the registry refuses."""
    subject = f"{topic}-value"
    client.register_schema(subject, Schema(json.dumps(ENVELOPE_SCHEMA), "AVRO"))
    client.set_compatibility(subject, "BACKWARD")
    conf = {"auto.register.schemas": False, "use.latest.version": False}
    serializer = AvroSerializer(client, json.dumps(ENVELOPE_SCHEMA), conf=conf)
    context = SerializationContext(topic, MessageField.VALUE)

    def serialize(envelope: dict[str, Any]) -> bytes:
        data = serializer(envelope, context)
        assert data is not None  # only None for a None value
        return data

    return serialize


def produce_cdc_dataset(bootstrap: str, registry_url: str, records: int, partitions: int) -> Dataset:
    """A fresh topic with the dataset's ``records`` records as Avro change events (see the module)."""
    topic = f"bench-cdc-{uuid.uuid4().hex[:10]}"
    serialize = registered_envelope_serializer(SchemaRegistryClient({"url": registry_url}), topic)

    def make(i: int) -> tuple[bytes, bytes]:
        key, _ = event_fields(i)
        return key, serialize(change_event(i))

    return produce_dataset(bootstrap, records, partitions, topic=topic, make=make)
