"""Registry formats through whole epochs: Kafka -> the write step (the real driver and tasks,
in-process) -> HBase, with the stack's real Schema Registry.

* Evolution: versions 1 and 2 of an Avro schema interleaved in one partition (v2 drops
  ``coupon`` and adds ``channel`` with a default); each record writes its own writer
  schema's fields; a backfill replay of the same range leaves byte-identical cells at
  identical versions; the epoch's metrics carry the schema ids it saw and one registry
  fetch per id.
* Bad input: no magic byte, an unknown schema id, a payload that does not decode: dead
  letters with their reason and exact offset; under ``bad_records: fail`` an error naming
  topic, partition, offset and schema id.
* A registry that cannot be reached fails the write (Airflow retries it): no dead letter,
  no cell, the epoch stays RESERVED; the retry with the registry back writes everything.
* Protobuf and JSON Schema values through one epoch each, exact cells.
* The write operator's check: a mapping field no registered version has is refused before
  any Spark job.
"""

from __future__ import annotations

import datetime
import decimal
import json
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import happybase
import psycopg2
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from airflow_provider_eo.config.config_errors import PipelineConfigError
from airflow_provider_eo.formats.registry.registry_errors import RegistryUnavailable
from airflow_provider_eo.ledger import PartitionRange
from airflow_provider_eo.operators.application_connections import check_registered_fields
from airflow_provider_eo.spark.driver.task_settings import task_settings
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.write_task import run_task
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import (
    EpochRoundTrip,
    EpochRow,
    ledger_connection,
    pipeline_spec,
    scan,
)
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import created_topic, produce
from tests.protobuf_messages import message_classes, order_file
from tests.protobuf_text_schemas import (
    ADDRESS_PROTO,
    SHIPMENT_PROTO,
    compiled_classes,
    framed,
    register_shipment,
)

pytestmark = pytest.mark.integration

UTC = datetime.UTC
UNKNOWN_ID = 2_000_000_000
PLACED = datetime.datetime(2026, 11, 25, 7, 0, 0, 123000, tzinfo=UTC)
ORDER_V1 = {
    "type": "record", "name": "Order", "namespace": "eo.pipelines",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
            {"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "placed_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "coupon", "type": ["null", "string"], "default": None},
    ],
}  # fmt: skip
ORDER_V2 = {
    **ORDER_V1,
    "fields": [f for f in ORDER_V1["fields"] if f["name"] != "coupon"]  # type: ignore[index]
    + [{"name": "channel", "type": "string", "default": "web"}],
}
MAPPING = {
    "value_format": "avro",
    "key_format": "string",
    "row_key": "order:{id}",
    "columns": {
        "customer_id": "customer.id",
        "name": "customer.name",
        "amount": "amount",
        "placed_at": "placed_at",
        "coupon": "coupon",
        "channel": "channel",
    },
}


def order(number: str, customer: int, amount: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": number,
        "customer": {"id": customer, "name": f"c{customer}"},
        "amount": decimal.Decimal(amount),
        "placed_at": PLACED,
        **extra,
    }


def registry_connection(url: str) -> str:
    """``AIRFLOW_CONN_SCHEMA_REGISTRY`` (JSON form) for the registry at ``url``."""
    parts = urlsplit(url)
    return json.dumps(
        {"conn_type": "http", "host": parts.hostname, "port": parts.port, "extra": {"path": parts.path}}
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class World:
    stack: StackInfo
    registry_url: str
    ledger_dsn: str
    client: SchemaRegistryClient

    def trip(self, topic: str, table: str, mapping: dict[str, Any], **options: Any) -> EpochRoundTrip:
        spec = pipeline_spec(table, topic, table, mapping=mapping, **options)
        env = {
            **self.stack.conn_env,
            "AIRFLOW_CONN_EO_LEDGER": ledger_connection(self.ledger_dsn),
            "AIRFLOW_CONN_SCHEMA_REGISTRY": registry_connection(self.registry_url),
        }
        return EpochRoundTrip(spec, self.ledger_dsn, env)

    def dead_letters(self, pipeline: str) -> list[tuple[int, str, bytes, int | None, str | None]]:
        """(offset, error, value, schema_id, error_class) of each dead letter."""
        with psycopg2.connect(self.ledger_dsn) as conn, conn.cursor() as cur:
            cur.execute(
                'SELECT "offset", error, value, schema_id, error_class FROM eo.dead_letters'
                ' WHERE pipeline = %s ORDER BY "offset"',
                (pipeline,),
            )
            return [(r[0], r[1], bytes(r[2]), r[3], r[4]) for r in cur.fetchall()]


@pytest.fixture(scope="module")
def world(stack: StackInfo, schema_registry_url: str) -> Iterator[World]:
    client = SchemaRegistryClient({"url": schema_registry_url})
    with fresh_database(stack.ledger_dsn) as dsn:
        yield World(stack, schema_registry_url, dsn, client)
    client.close()


@pytest.fixture
def table(stack: StackInfo) -> Iterator[str]:
    name = f"registry_{uuid.uuid4().hex[:8]}"
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    connection.create_table(name, {"d": {}})
    connection.close()
    yield name
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)  # a fresh one: idle ones get closed
    connection.delete_table(name, disable=True)
    connection.close()


def versioned_scan(stack: StackInfo, table: str) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
    """Every row's newest cells with their versions."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        return dict(connection.table(table).scan(include_timestamp=True))
    finally:
        connection.close()


def avro_topic(world: World, topic: str) -> tuple[list[bytes], int, int]:
    """Register v1 then v2 (BACKWARD, set explicitly) under ``<topic>-value``; the records of
    the evolution case, then the three bad ones. Returns (values, v1 id, v2 id)."""
    subject = f"{topic}-value"
    v1 = world.client.register_schema(subject, Schema(json.dumps(ORDER_V1), "AVRO"))
    world.client.set_compatibility(subject, "BACKWARD")
    v2 = world.client.register_schema(subject, Schema(json.dumps(ORDER_V2), "AVRO"))
    conf = {"auto.register.schemas": False, "use.latest.version": False}
    ctx = SerializationContext(topic, MessageField.VALUE)
    with_v1 = AvroSerializer(world.client, json.dumps(ORDER_V1), conf=conf)
    with_v2 = AvroSerializer(world.client, json.dumps(ORDER_V2), conf=conf)
    first = with_v1(order("o1", 7, "12.50", coupon="SAVE"), ctx)
    values = [
        first,
        with_v2(order("o2", 8, "0.05", channel="app"), ctx),
        with_v1(order("o3", 9, "-3.10", coupon=None), ctx),
        with_v2(order("o1", 7, "13.00", channel="web"), ctx),
        b'{"id": "o9"}',  # JSON where Avro was promised: no magic byte
        b"\x00" + UNKNOWN_ID.to_bytes(4, "big") + b"\x02",  # an id the registry never issued
        first[:8],  # v1's id, a payload cut short
    ]
    return values, v1, v2


ISO = b"2026-11-25T07:00:00.123000Z"
CUT_SHORT = "value: avro payload of schema id {} does not decode (it ends before the record does): EOFError"


def test_interleaved_schema_versions_write_exact_cells_and_replay_byte_identically(
    world: World, table: str
) -> None:
    with created_topic(world.stack.kafka_bootstrap, prefix="avro-evolution") as topic:
        values, v1, v2 = avro_topic(world, topic)
        produce(world.stack.kafka_bootstrap, topic, [(b"k", v) for v in values], partition=0)
        trip = world.trip(topic, table, MAPPING, bad_records="dead_letter")
        epoch = trip.run_stream_epoch()
        assert epoch is not None
        assert scan(world.stack, table) == {
            b"order:o1": {b"d:customer_id": b"7", b"d:name": b"c7", b"d:amount": b"13.00",
                          b"d:placed_at": ISO, b"d:coupon": b"SAVE", b"d:channel": b"web"},
            b"order:o2": {b"d:customer_id": b"8", b"d:name": b"c8", b"d:amount": b"0.05",
                          b"d:placed_at": ISO, b"d:channel": b"app"},
            b"order:o3": {b"d:customer_id": b"9", b"d:name": b"c9", b"d:amount": b"-3.10",
                          b"d:placed_at": ISO, b"d:coupon": b"null"},
        }  # fmt: skip
        assert world.dead_letters(table) == [
            (4, "value: no Confluent wire-format magic byte (first byte 0x7b)", values[4], None, "BadRecord"),
            (
                5,
                f"value: schema id {UNKNOWN_ID} is unknown to the registry (HTTP 404, error code 40403)",
                values[5],
                UNKNOWN_ID,
                "BadRecord",
            ),
            (6, f"{CUT_SHORT.format(v1)}", values[6], v1, "BadRecord"),
        ]
        metrics = epoch.metrics or {}
        assert (metrics["schema_ids"], metrics["schema_fetches"]) == (sorted([v1, v2]), 3)
        before = versioned_scan(world.stack, table)
        replay = trip.reserve_backfill([PartitionRange(topic, 0, 0, len(values))])
        assert trip.write_and_commit(replay).state.value == "COMMITTED"
        assert versioned_scan(world.stack, table) == before
        assert [row.state for row in trip.epochs()] == ["COMMITTED", "COMMITTED"]
        assert len(world.dead_letters(table)) == 3  # the replay's dead letters are not added twice


def test_bad_records_fail_names_topic_partition_offset_and_schema_id(world: World, table: str) -> None:
    with created_topic(world.stack.kafka_bootstrap, prefix="avro-fail") as topic:
        values, v1, _ = avro_topic(world, topic)
        produce(world.stack.kafka_bootstrap, topic, [(b"k", v) for v in values[:3] + values[6:]], partition=0)
        trip = world.trip(topic, table, MAPPING, bad_records="fail")
        epoch = trip.reserve()
        assert epoch is not None
        with trip.connections():
            settings = task_settings(trip.spec, epoch.epoch_id)
        with pytest.raises(Exception) as info:
            run_task(settings, TaskRange(topic, 0, 0, 4))
        assert str(info.value) == (
            f"bad record in pipeline {table!r} epoch {epoch.epoch_id} at topic {topic} partition 0 "
            f"offset 3: {CUT_SHORT.format(v1)}"
        )


def test_an_unreachable_registry_fails_the_write_and_loses_nothing(world: World, table: str) -> None:
    with created_topic(world.stack.kafka_bootstrap, prefix="avro-outage") as topic:
        values, _, _ = avro_topic(world, topic)
        produce(world.stack.kafka_bootstrap, topic, [(b"k", v) for v in values[:4]], partition=0)
        trip = world.trip(topic, table, MAPPING, bad_records="dead_letter")
        port = closed_port()
        trip.env["AIRFLOW_CONN_SCHEMA_REGISTRY"] = registry_connection(
            f"http://127.0.0.1:{port}/apis/ccompat/v7"
        )
        epoch = trip.reserve()
        assert epoch is not None
        with pytest.raises(RegistryUnavailable) as info:  # in Spark: exit code 4, Airflow retries
            trip.write(epoch.epoch_id)
        assert str(info.value).startswith(
            f"Schema Registry http://127.0.0.1:{port}/apis/ccompat/v7 "
            "(connection 'schema_registry') unreachable"
        )
        assert (scan(world.stack, table), world.dead_letters(table)) == ({}, [])
        assert trip.epochs() == [EpochRow("stream", "RESERVED", ((0, 0, 4),), ())]
        trip.env["AIRFLOW_CONN_SCHEMA_REGISTRY"] = registry_connection(world.registry_url)
        assert trip.write_and_commit(epoch).state.value == "COMMITTED"  # the task retry
        assert sorted(scan(world.stack, table)) == [b"order:o1", b"order:o2", b"order:o3"]
        assert world.dead_letters(table) == []


def test_protobuf_values_write_exact_cells(world: World, table: str) -> None:
    with created_topic(world.stack.kafka_bootstrap, prefix="proto") as topic:
        classes = message_classes(order_file(f"{topic}.proto"))
        serialize = ProtobufSerializer(classes["Order"], world.client, {"use.deprecated.format": False})
        message = classes["Order"](id=2**40, sku="a-1", blob=b"\x00\xff", status=1, tags=["x"], price=1.5)
        message.at.FromDatetime(datetime.datetime(2026, 11, 25, 7, 0, 0, 123456, tzinfo=UTC))
        message.counts["red"] = -3
        message.customer.name = "ann"
        data = serialize(message, SerializationContext(topic, MessageField.VALUE))
        produce(world.stack.kafka_bootstrap, topic, [(b"p1", data)], partition=0)
        mapping = {"value_format": "protobuf", "columns": {"id": "id", "sku": "sku", "blob": "blob",
                   "status": "status", "at": "at", "tags": "tags", "counts": "counts",
                   "customer": "customer.name", "price": "price"}}  # fmt: skip
        world.trip(topic, table, mapping).run_stream_epoch()
        assert scan(world.stack, table) == {
            b"p1": {b"d:id": b"1099511627776", b"d:sku": b"a-1", b"d:blob": b"\x00\xff",
                    b"d:status": b"PAID", b"d:at": b"2026-11-25T07:00:00.123456Z", b"d:tags": b'["x"]',
                    b"d:counts": b'{"red":-3}', b"d:customer": b"ann", b"d:price": b"1.5"},
        }  # fmt: skip


def test_protobuf_values_of_a_proto_text_schema_write_exact_cells(world: World, table: str) -> None:
    """A schema registered as .proto text (with a reference), as a Java producer registers it:
    compiled inside the Spark task, its records write exact cells."""
    with created_topic(world.stack.kafka_bootstrap, prefix="prototext") as topic:
        sid = register_shipment(world.client, topic)
        classes = compiled_classes({"eo/addr/address.proto": ADDRESS_PROTO, "shipment.proto": SHIPMENT_PROTO})
        shipment = classes["eo.text.Shipment"](id=42, stage=1)
        shipment.at.FromDatetime(datetime.datetime(2026, 11, 25, 7, 0, 0, 123456, tzinfo=UTC))
        shipment.parcels.add(label="p1", size={"kg": 2.5, "cm": 40})
        shipment.counts["red"] = 3
        shipment.to.city = "Oslo"
        produce(world.stack.kafka_bootstrap, topic, [(b"s1", framed(sid, b"\x00", shipment))], partition=0)
        columns = {"id": "id", "stage": "stage", "at": "at", "kg": "parcels.0.size.kg", "parcels": "parcels"}
        mapping = {"value_format": "protobuf", "columns": {**columns, "counts": "counts", "city": "to.city"}}
        world.trip(topic, table, mapping).run_stream_epoch()
        assert scan(world.stack, table) == {
            b"s1": {b"d:id": b"42", b"d:stage": b"SHIPPED", b"d:at": b"2026-11-25T07:00:00.123456Z",
                    b"d:kg": b"2.5", b"d:parcels": b'[{"label":"p1","size":{"kg":2.5,"cm":40}}]',
                    b"d:counts": b'{"red":3}', b"d:city": b"Oslo"},
        }  # fmt: skip


JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Reading",
    "type": "object",
    "properties": {"sensor": {"type": "object", "properties": {"id": {"type": "string"}}},
                   "value": {"type": "number"}},
    "required": ["sensor", "value"],
}  # fmt: skip


def test_json_schema_values_write_exact_cells(world: World, table: str) -> None:
    with created_topic(world.stack.kafka_bootstrap, prefix="jsonschema") as topic:
        serialize = JSONSerializer(json.dumps(JSON_SCHEMA), world.client)
        ctx = SerializationContext(topic, MessageField.VALUE)
        values = [serialize({"sensor": {"id": "s1"}, "value": 21.5}, ctx),
                  serialize({"sensor": {"id": "s2"}, "value": 7}, ctx)]  # fmt: skip
        produce(world.stack.kafka_bootstrap, topic, [(b"r1", values[0]), (b"r2", values[1])], partition=0)
        mapping = {"value_format": "json_schema", "row_key": "{sensor.id}", "columns": {"v": "value"}}
        world.trip(topic, table, mapping).run_stream_epoch()
        assert scan(world.stack, table) == {b"s1": {b"d:v": b"21.5"}, b"s2": {b"d:v": b"7"}}


def test_a_mapping_field_no_registered_schema_has_is_refused_before_spark(
    world: World, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = f"never-produced-{uuid.uuid4().hex[:8]}"
    avro_topic(world, topic)
    mapping = {**MAPPING, "columns": {**MAPPING["columns"], "zip": "customer.zip"}}  # type: ignore[dict-item]
    spec = pipeline_spec(table, topic, table, mapping=mapping)
    monkeypatch.setenv("AIRFLOW_CONN_SCHEMA_REGISTRY", registry_connection(world.registry_url))
    with pytest.raises(PipelineConfigError) as info:
        check_registered_fields(spec, "schema_registry")
    assert str(info.value) == (
        f"<test>: pipeline {table!r}: field 'mapping': field 'customer.zip' is in no registered "
        f"schema of subject '{topic}-value' (versions checked: 1, 2)"
    )
    assert (
        check_registered_fields(pipeline_spec(table, topic, table, mapping=MAPPING), "schema_registry") == []
    )
