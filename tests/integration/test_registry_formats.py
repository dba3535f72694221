"""Avro, Protobuf and JSON Schema records on the real Schema Registry (Apicurio's
Confluent-compatible API): produced with confluent-kafka's own serializers, decoded by the
provider's decoders to exact Python values; every bad-input case a bad record naming the
schema id; a registry that cannot answer a RegistryUnavailable, never a bad record; one
registry fetch per schema id per task; the connection's secrets in no repr and no log."""

from __future__ import annotations

import base64
import datetime
import decimal
import http.server
import json
import logging
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from airflow_provider_eo.config.config_errors import PipelineConfigError
from airflow_provider_eo.errors import BadRecord, EoError, RegistryAccessError
from airflow_provider_eo.formats.registry import (
    RegistrySettings,
    RegistryUnavailable,
    SchemaCache,
    registry_decoder,
)
from airflow_provider_eo.formats.registry.field_check import check_fields_registered
from airflow_provider_eo.hooks.schema_registry import EoSchemaRegistryHook
from tests.protobuf_messages import message_classes, order_file
from tests.protobuf_text_schemas import (
    ADDRESS_PROTO,
    SHIPMENT_PROTO,
    compiled_classes,
    descriptor_of,
    framed,
    register_shipment,
)

pytestmark = pytest.mark.integration

UTC = datetime.UTC
SECRET = "reg-pa55-word"
UNKNOWN_ID = 2_000_000_000


@pytest.fixture(scope="module")
def client(schema_registry_url: str) -> Iterator[SchemaRegistryClient]:
    registry = SchemaRegistryClient({"url": schema_registry_url})
    yield registry
    registry.close()


@pytest.fixture
def cache(schema_registry_url: str) -> Iterator[SchemaCache]:
    """A task's cache (its own client, as on an executor)."""
    task_cache = SchemaCache.from_settings(RegistrySettings(url=schema_registry_url))
    yield task_cache
    task_cache.close()


def topic() -> str:
    return f"eo-formats-{uuid.uuid4().hex[:10]}"


def value_ctx(name: str) -> SerializationContext:
    return SerializationContext(name, MessageField.VALUE)


def schema_id(data: bytes) -> int:
    return int.from_bytes(data[1:5], "big")


def reason(decode: Any, data: bytes) -> str:
    with pytest.raises(BadRecord) as info:
        decode(data)
    return info.value.reason


ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "eo.test",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "seen", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 2}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
            {"name": "name", "type": "string"}, {"name": "tier", "type": "int"}]}},
    ],
}  # fmt: skip
#: Version 2: drops ``note``, adds ``channel`` with a default (BACKWARD compatible).
ORDER_V2 = {
    **ORDER_V1,
    "fields": [f for f in ORDER_V1["fields"] if f["name"] != "note"]  # type: ignore[index]
    + [{"name": "channel", "type": "string", "default": "web"}],
}


def order(number: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": number,
        "placed": datetime.datetime(2024, 5, 1, 12, 30, 15, 123000, tzinfo=UTC),
        "seen": datetime.datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC),
        "day": datetime.date(2024, 5, 1),
        "at": datetime.time(12, 30, 15, 123000),
        "amount": decimal.Decimal("-12.34"),
        "ref": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "status": "PAID",
        "digest": b"\x00\xff",
        "tags": ["a", "b"],
        "attrs": {"x": 2**40},
        "customer": {"name": "ann", "tier": 3},
        **extra,
    }


def test_avro_records_decode_to_exact_values_with_logical_types(
    client: SchemaRegistryClient, cache: SchemaCache
) -> None:
    name = topic()
    data = AvroSerializer(client, json.dumps(ORDER_V1))(order(7, note="hi"), value_ctx(name))
    assert registry_decoder("avro", "value", cache)(data) == order(7, note="hi")
    assert (cache.fetches, cache.schema_ids) == (1, [schema_id(data)])


def test_interleaved_schema_versions_decode_each_with_its_writer_schema_one_fetch_per_id(
    client: SchemaRegistryClient, cache: SchemaCache
) -> None:
    name = topic()
    client.set_compatibility(f"{name}-value", "BACKWARD")
    v1 = AvroSerializer(client, json.dumps(ORDER_V1))
    v2 = AvroSerializer(client, json.dumps(ORDER_V2))
    records = [
        v1(order(i, note=f"n{i}"), value_ctx(name)) if i % 2 else v2(order(i, channel="app"), value_ctx(name))
        for i in range(100)
    ]
    decode = registry_decoder("avro", "value", cache)
    decoded = [decode(data) for data in records]
    assert decoded == [order(i, note=f"n{i}") if i % 2 else order(i, channel="app") for i in range(100)]
    ids = sorted({schema_id(data) for data in records})
    assert (len(ids), cache.fetches, cache.schema_ids) == (2, 2, ids)


def test_protobuf_records_decode_by_their_message_indexes_without_generated_classes(
    client: SchemaRegistryClient, cache: SchemaCache
) -> None:
    name = topic()
    classes = message_classes(order_file(f"{name}.proto"))
    conf = {"use.deprecated.format": False}
    message = classes["Order"](id=2**40, sku="a-1", blob=b"\x00\xff", status=1, tags=["x", "y"], price=1.5)
    message.at.FromDatetime(datetime.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC))
    message.counts["red"] = -3
    message.customer.name = "ann"
    refund = classes["Refund"](order_id=9, reason="late")
    customer = classes["Order.Customer"](name="bo", tier=2)
    # one subject per message type: the registry keeps one schema per subject version
    order_data = ProtobufSerializer(classes["Order"], client, conf)(message, value_ctx(name))
    refund_data = ProtobufSerializer(classes["Refund"], client, conf)(refund, value_ctx(f"{name}-r"))
    customer_data = ProtobufSerializer(classes["Order.Customer"], client, conf)(
        customer, value_ctx(f"{name}-c")
    )
    decode = registry_decoder("protobuf", "value", cache)
    assert [decode(order_data), decode(refund_data), decode(customer_data)] == [
        {
            "id": 2**40, "sku": "a-1", "blob": b"\x00\xff", "status": "PAID",
            "at": datetime.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC), "tags": ["x", "y"],
            "counts": {"red": -3}, "customer": {"name": "ann", "tier": 0}, "missing": None,
            "price": 1.5, "gift": False, "big": 0,
        },
        {"order_id": 9, "reason": "late"},
        {"name": "bo", "tier": 2},
    ]  # fmt: skip
    assert (order_data[5:6], refund_data[5:7], customer_data[5:8]) == (b"\x00", b"\x02\x02", b"\x04\x00\x00")
    assert [decode(order_data)["id"] for _ in range(50)] == [2**40] * 50
    ids = sorted({schema_id(data) for data in (order_data, refund_data, customer_data)})
    assert (cache.fetches, cache.schema_ids) == (len(ids), ids)  # one fetch per schema id


JSON_ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "when": {"type": "string", "format": "date-time"},
                   "lines": {"type": "array", "items": {"type": "number"}}},
    "required": ["id"],
}  # fmt: skip


def test_json_schema_records_decode_and_are_validated_against_their_schema(
    client: SchemaRegistryClient, cache: SchemaCache
) -> None:
    name = topic()
    document = {"id": 2**53 + 1, "when": "2024-05-01T12:00:00Z", "lines": [1, 2.5]}
    data = JSONSerializer(json.dumps(JSON_ORDER), client)(document, value_ctx(name))
    decode = registry_decoder("json_schema", "value", cache)
    assert decode(data) == document
    sid = schema_id(data)
    assert reason(decode, data[:5] + b'{"id": "seven"}') == (
        f"value: json_schema payload of schema id {sid} is not valid against its schema at id: "
        "'seven' is not of type 'integer'"
    )
    assert reason(decode, data[:5] + b'{"id": 1,') == (
        f"value: json_schema payload of schema id {sid} is not JSON: "
        "Expecting property name enclosed in double quotes: line 1 column 10 (char 9)"
    )


def test_an_unknown_schema_id_is_a_bad_record_naming_it_fetched_once(cache: SchemaCache) -> None:
    decode = registry_decoder("avro", "key", cache)
    data = b"\x00" + UNKNOWN_ID.to_bytes(4, "big") + b"\x02"
    expected = f"key: schema id {UNKNOWN_ID} is unknown to the registry (HTTP 404, error code 40403)"
    assert [reason(decode, data), reason(decode, data)] == [expected, expected]
    assert (cache.fetches, cache.schema_ids) == (1, [])


def test_a_missing_magic_byte_is_a_bad_record_without_a_registry_call(cache: SchemaCache) -> None:
    assert reason(registry_decoder("protobuf", "value", cache), b'{"id": 1}') == (
        "value: no Confluent wire-format magic byte (first byte 0x7b)"
    )
    assert cache.fetches == 0


def test_payloads_that_do_not_decode_are_bad_records_naming_the_schema_id(
    client: SchemaRegistryClient, cache: SchemaCache
) -> None:
    name = topic()
    avro = AvroSerializer(client, json.dumps(ORDER_V1))(order(1), value_ctx(name))
    classes = message_classes(order_file(f"{name}.proto"))
    proto = ProtobufSerializer(classes["Refund"], client, {"use.deprecated.format": False})(
        classes["Refund"](order_id=1), value_ctx(f"{name}-p")
    )
    avro_id, proto_id = schema_id(avro), schema_id(proto)
    decode_avro = registry_decoder("avro", "value", cache)
    decode_proto = registry_decoder("protobuf", "value", cache)
    assert [
        reason(decode_avro, avro[:12]),
        reason(decode_avro, avro + b"\x00"),
        reason(decode_proto, proto[:7] + b"\x0a\xff\xff"),
        reason(decode_proto, avro),
        reason(decode_avro, proto),
    ] == [
        f"value: avro payload of schema id {avro_id} does not decode (it ends before the record does): "
        "IndexError: string index out of range",
        f"value: avro payload of schema id {avro_id} has 1 bytes left after the record",
        f"value: protobuf payload of schema id {proto_id} (message eo.test.Refund) does not decode: "
        "DecodeError: Error parsing message with type 'eo.test.Refund': Wire format was corrupt",
        f"value: schema id {avro_id} is a AVRO schema, the pipeline's value format is protobuf",
        f"value: schema id {proto_id} is a PROTOBUF schema, the pipeline's value format is avro",
    ]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_registry_is_retryable_never_a_bad_record(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://eo:{SECRET}@127.0.0.1:{closed_port()}/apis/ccompat/v7"
    settings = RegistrySettings(url=url, max_retries=1, retries_wait_ms=10)
    cache = SchemaCache.from_settings(settings)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(RegistryUnavailable) as info:
        registry_decoder("avro", "value", cache)(b"\x00\x00\x00\x00\x07\x02")
    error = info.value
    kinds = (isinstance(error, BadRecord), isinstance(error, RegistryAccessError), isinstance(error, EoError))
    assert kinds == (False, True, True)
    assert str(error).startswith(
        f"Schema Registry {settings.display_url} unreachable for schema id 7: ConnectError:"
    )
    assert SECRET not in str(error) + repr(settings) + caplog.text
    cache.close()


class _NoMethods(http.server.BaseHTTPRequestHandler):
    """The standard library's handler as it is: it implements no method, so it answers every
    GET with 501 (a real 5xx from a real HTTP server; Apicurio gives none on these paths)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server_answering_5xx() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoMethods)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/apis/ccompat/v7"
    server.shutdown()
    server.server_close()


def test_a_registry_answering_5xx_is_retryable_never_a_bad_record(server_answering_5xx: str) -> None:
    cache = SchemaCache.from_settings(RegistrySettings(url=server_answering_5xx, user_info=f"eo:{SECRET}"))
    with pytest.raises(RegistryUnavailable) as info:
        registry_decoder("json_schema", "value", cache)(b"\x00\x00\x00\x00\x09{}")
    assert str(info.value).startswith(
        f"Schema Registry {server_answering_5xx} answered HTTP 501, error code -1 for schema id 9:"
    )
    assert SECRET not in str(info.value)
    cache.close()


def test_basic_auth_settings_never_show_in_repr_or_logs(
    schema_registry_url: str, client: SchemaRegistryClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Apicurio runs without auth here and ignores the header: the secret is sent, never shown."""
    data = AvroSerializer(client, json.dumps(ORDER_V1))(order(3), value_ctx(topic()))
    settings = RegistrySettings(url=schema_registry_url, user_info=f"eo:{SECRET}")
    caplog.set_level(logging.DEBUG)
    cache = SchemaCache.from_settings(settings)
    logging.getLogger("test").info("settings %s cache %s", settings, cache.where)
    assert registry_decoder("avro", "value", cache)(data) == order(3, note=None)
    cache.close()
    assert (SECRET in repr(settings), SECRET in caplog.text, "settings RegistrySettings(" in caplog.text) == (
        False, False, True
    )  # fmt: skip


def test_mapping_fields_are_checked_against_every_registered_version(
    schema_registry_url: str, client: SchemaRegistryClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = topic()
    client.set_compatibility(f"{name}-value", "BACKWARD")
    AvroSerializer(client, json.dumps(ORDER_V1))(order(1), value_ctx(name))
    AvroSerializer(client, json.dumps(ORDER_V2))(order(2, channel="app"), value_ctx(name))
    paths = ["customer.name", "note", "channel", "tags.0", "key.id"]
    assert check_fields_registered("orders", paths, [name], client) == [f"{name}-key"]
    with pytest.raises(PipelineConfigError) as info:
        check_fields_registered("orders", [*paths, "customer.email", "nope"], [name], client, file="p.yaml")
    missing = "is in no registered schema of subject"
    assert str(info.value) == (
        f"p.yaml: pipeline 'orders': field 'mapping': field 'customer.email' {missing} "
        f"'{name}-value' (versions checked: 1, 2); "
        f"field 'nope' {missing} '{name}-value' (versions checked: 1, 2)"
    )
    monkeypatch.setenv("AIRFLOW_CONN_SCHEMA_REGISTRY", json.dumps({"conn_type": "http", "extra": {
        "url": schema_registry_url}}))  # fmt: skip
    hook = EoSchemaRegistryHook()
    versions = hook.registered_field_paths(f"{name}-value")
    latest = hook.latest_field_paths(f"{name}-value")
    found = (sorted(versions), "note" in versions[1].paths, latest is not None and "channel" in latest.paths)
    assert found == ([1, 2], True, True)
    assert hook.latest_field_paths(f"{name}-key") is None


def test_protobuf_schemas_registered_as_proto_text_are_compiled_once_and_decode_exactly(
    client: SchemaRegistryClient, cache: SchemaCache
) -> None:
    name = topic()
    sid = register_shipment(client, name)
    assert "message Shipment" in (client.get_schema(sid, fmt="serialized").schema_str or "")  # text back
    classes = compiled_classes({"eo/addr/address.proto": ADDRESS_PROTO, "shipment.proto": SHIPMENT_PROTO})
    shipment = classes["eo.text.Shipment"](id=-(2**40), stage=1)
    shipment.at.FromDatetime(datetime.datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC))
    shipment.parcels.add(label="p1", size={"kg": 2.5, "cm": 40})
    shipment.parcels.add(label="p2")
    shipment.counts["red"] = 3
    shipment.to.city = "Oslo"
    shipment.to.lines.extend(["Gate 1", "3rd floor"])
    parcel = classes["eo.text.Shipment.Parcel"](label="solo", size={"kg": 0.5, "cm": 7})
    note = classes["eo.text.Note"](text="fragile")
    decode = registry_decoder("protobuf", "value", cache)
    # Parcel is [0, 1]: protoc puts the map's CountsEntry first among Shipment's nested types
    records = [
        framed(sid, b"\x00", shipment),
        framed(sid, b"\x04\x00\x02", parcel),
        framed(sid, b"\x02\x02", note),
    ]
    assert [decode(data) for data in records] == [
        {
            "id": -(2**40), "stage": "SHIPPED",
            "at": datetime.datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC),
            "parcels": [{"label": "p1", "size": {"kg": 2.5, "cm": 40}}, {"label": "p2", "size": None}],
            "counts": {"red": 3}, "to": {"city": "Oslo", "lines": ["Gate 1", "3rd floor"]},
        },
        {"label": "solo", "size": {"kg": 0.5, "cm": 7}},
        {"text": "fragile"},
    ]  # fmt: skip
    assert [decode(records[0])["id"] for _ in range(20)] == [-(2**40)] * 20
    assert (cache.fetches, cache.schema_ids) == (2, [sid])  # the schema and its reference, once


def test_a_proto_text_schema_may_reference_a_schema_registered_as_a_descriptor(
    client: SchemaRegistryClient, cache: SchemaCache
) -> None:
    """The reference was registered by confluent-kafka's Python serializer (base64), the schema
    importing it by a Java producer (text): protoc is given the reference as a descriptor."""
    name = topic()
    address = descriptor_of(ADDRESS_PROTO, "eo/addr/address.proto")
    encoded = base64.b64encode(address.SerializeToString()).decode()
    client.register_schema(f"{name}-address", Schema(encoded, "PROTOBUF"))
    reference = SchemaReference("eo/addr/address.proto", f"{name}-address", 1)
    sid = client.register_schema(f"{name}-value", Schema(SHIPMENT_PROTO, "PROTOBUF", [reference]))
    classes = compiled_classes({"eo/addr/address.proto": ADDRESS_PROTO, "shipment.proto": SHIPMENT_PROTO})
    shipment = classes["eo.text.Shipment"](id=5)
    shipment.to.lines.append("Gate 1")
    decoded = registry_decoder("protobuf", "value", cache)(framed(sid, b"\x00", shipment))
    assert (decoded["id"], decoded["to"]) == (5, {"city": "", "lines": ["Gate 1"]})
    assert (cache.fetches, cache.schema_ids) == (2, [sid])


def test_a_proto_text_schema_that_does_not_compile_is_a_bad_record_quoting_protoc(
    client: SchemaRegistryClient, cache: SchemaCache
) -> None:
    """Apicurio refuses to register text that does not parse (HTTP 422), so what reaches a task
    is text protoc rejects for its meaning: an undefined type, a field number used twice.
    (A syntax error is quoted the same way: tests/unit/test_proto_compiler.py.)"""
    undefined = 'syntax = "proto3";\npackage eo.text;\nmessage M { int64 id = 1; Missing m = 2; }\n'
    twice = 'syntax = "proto3";\npackage eo.text;\nmessage M { int64 id = 1; string s = 1; }\n'
    ids = [
        client.register_schema(f"{topic()}-value", Schema(text, "PROTOBUF")) for text in (undefined, twice)
    ]
    decode = registry_decoder("protobuf", "value", cache)
    records = [b"\x00" + sid.to_bytes(4, "big") + b"\x00\x08\x07" for sid in ids]
    does_not_compile = "the registry's .proto text does not compile: registry-schema.proto:3"
    assert [reason(decode, data) for data in (*records, records[0])] == [
        f'value: schema id {ids[0]}: {does_not_compile}:27: "Missing" is not defined.',
        f"value: schema id {ids[1]}: {does_not_compile}:38: Field number 1 has already been used in "
        '"eo.text.M" by field "id". Next available field number is 2.',
        f'value: schema id {ids[0]}: {does_not_compile}:27: "Missing" is not defined.',
    ]
    assert cache.fetches == 2  # compiled (and failed) once per schema id


def test_mapping_fields_are_checked_against_a_proto_text_subject(client: SchemaRegistryClient) -> None:
    name = topic()
    register_shipment(client, name)
    paths = ["id", "stage", "at", "parcels.0.size.kg", "counts.red", "to.city", "to.lines.1"]
    assert check_fields_registered("shipments", paths, [name], client) == []
    with pytest.raises(PipelineConfigError) as info:
        check_fields_registered("shipments", ["to.zip"], [name], client, file="p.yaml")
    assert str(info.value) == (
        "p.yaml: pipeline 'shipments': field 'mapping': field 'to.zip' is in no registered schema of "
        f"subject '{name}-value' (versions checked: 1)"
    )
    broken = 'syntax = "proto3";\nmessage M { int64 id = 1; Missing m = 2; }\n'
    client.register_schema(f"{name}-b-value", Schema(broken, "PROTOBUF"))
    with pytest.raises(PipelineConfigError) as info:
        check_fields_registered("shipments", ["id"], [f"{name}-b"], client, file="p.yaml")
    assert str(info.value) == (
        f"p.yaml: pipeline 'shipments': field 'mapping': subject '{name}-b-value': subject '{name}-b-value' "
        "version 1: the registry's .proto text does not compile: registry-schema.proto:2:27: "
        '"Missing" is not defined.'
    )


def test_schema_references_resolve_through_the_task_cache_and_count_as_fetches(
    client: SchemaRegistryClient, cache: SchemaCache
) -> None:
    name = topic()
    customer = {"type": "record", "name": "Customer", "namespace": "eo.ref",
                "fields": [{"name": "name", "type": "string"}]}  # fmt: skip
    client.register_schema(f"{name}-customer", Schema(json.dumps(customer), "AVRO"))
    reference = SchemaReference("eo.ref.Customer", f"{name}-customer", 1)
    fields = [{"name": "id", "type": "long"}, {"name": "customer", "type": "eo.ref.Customer"}]
    order_schema = {"type": "record", "name": "Order", "namespace": "eo.ref", "fields": fields}
    serializer = AvroSerializer(client, Schema(json.dumps(order_schema), "AVRO", [reference]))
    records = [serializer({"id": i, "customer": {"name": f"c{i}"}}, value_ctx(name)) for i in range(3)]
    decode = registry_decoder("avro", "value", cache)
    assert [decode(data) for data in records] == [{"id": i, "customer": {"name": f"c{i}"}} for i in range(3)]
    assert (cache.fetches, cache.schema_ids) == (2, [schema_id(records[0])])  # the schema and its reference
    assert check_fields_registered("orders", ["customer.name"], [name], client) == []
