"""The Avro demo's registry steps (eo_devtools.demo.registry_schemas) on the real Schema
Registry: v1 registered, BACKWARD set explicitly, v2 registered; the serializers write the
registered ids; registering again keeps them; the oracle's writer schemas cover exactly the
ids the registry knows, so the sample's bad records are bad and the rest decode."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from eo_devtools.demo.avro_events import (
    BAD_KINDS,
    UNKNOWN_SCHEMA_ID,
    order_events,
    serialized_events,
    value_subject,
)
from eo_devtools.demo.avro_expected_state import AvroOracle, decode_wire, schema_id_of
from eo_devtools.demo.expected_state import ProducedRecord
from eo_devtools.demo.registry_schemas import registered_serializers, writer_schemas

pytestmark = pytest.mark.integration


def test_registered_serializers_and_writer_schemas(schema_registry_url: str) -> None:
    client = SchemaRegistryClient({"url": schema_registry_url})
    topic = f"demo-avro-{uuid.uuid4().hex[:12]}"
    v1, v2 = registered_serializers(client, topic)
    assert client.get_compatibility(value_subject(topic)) == "BACKWARD"
    assert client.get_versions(value_subject(topic)) == [1, 2]

    events = list(order_events(400))
    pairs = list(serialized_events(iter(events), v1, v2))
    records = [ProducedRecord(topic, 0, offset, key, value) for offset, (key, value) in enumerate(pairs)]
    ids = Counter(schema_id_of(r.value) for r in records)
    v1_event = next(e for e in events if e.kind == "v1")
    v2_event = next(e for e in events if e.kind == "v2")
    v1_id, v2_id = schema_id_of(v1(v1_event.order or {})), schema_id_of(v2(v2_event.order or {}))
    assert v1_id != v2_id
    assert set(ids) == {None, v1_id, v2_id, UNKNOWN_SCHEMA_ID}

    fresh = SchemaRegistryClient({"url": schema_registry_url})  # no cached ids: the registry answers
    again_v1, again_v2 = registered_serializers(fresh, topic)
    assert fresh.get_versions(value_subject(topic)) == [1, 2]
    assert schema_id_of(again_v1(v1_event.order or {})) == v1_id
    assert schema_id_of(again_v2(v2_event.order or {})) == v2_id
    schemas = writer_schemas(fresh, records)
    assert sorted(schemas) == sorted([v1_id, v2_id])

    oracle = AvroOracle("d", None, schemas)
    assert [oracle.is_bad(r) for r in records] == [e.kind in BAD_KINDS for e in events]

    # the oracle reads each good value as confluent-kafka's own deserializer does (writer schema)
    deserialize = AvroDeserializer(fresh)
    context = SerializationContext(topic, MessageField.VALUE)
    good = [(e.kind, r.value) for r, e in zip(records, events, strict=True) if e.kind in ("v1", "v2")]
    decoded = [decode_wire(v or b"", schemas) for _, v in good]
    assert decoded == [deserialize(v, context) for _, v in good]
    own_field = {"v1": "coupon", "v2": "channel"}
    assert [sorted(set(d) & {"coupon", "channel"}) for d in decoded] == [[own_field[k]] for k, _ in good]
