"""Field paths a schema declares (Avro, Protobuf, JSON Schema), and a Protobuf message as
plain Python values (the descriptor-driven conversion, on a class built at test time)."""

from __future__ import annotations

import datetime

from airflow_provider_eo.formats.registry.field_paths import (
    SchemaFields,
    avro_field_paths,
    json_schema_field_paths,
    protobuf_field_paths,
)
from airflow_provider_eo.formats.registry.protobuf_values import message_to_python
from tests.protobuf_messages import message_classes, order_file

AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "eo.test",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
            {"name": "id", "type": "string"},
            {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
                {"name": "city", "type": "string"}]}]},
        ]}},
        {"name": "buyer", "type": ["null", "eo.test.Customer"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "next", "type": ["null", "Order"]},
        {"name": "item", "type": "Item"},
    ],
}  # fmt: skip
ITEM = {"type": "record", "name": "Item", "fields": [{"name": "sku", "type": "string"}]}


def test_avro_paths_go_through_records_unions_named_types_namespaces_and_references() -> None:
    fields = avro_field_paths(AVRO, {"Item": ITEM})
    assert fields == SchemaFields(
        paths={
            "id", "customer", "customer.id", "customer.address", "customer.address.city",
            "buyer", "buyer.id", "buyer.address", "buyer.address.city",
            "tags", "attrs", "ts", "next", "item", "item.sku",
        },
        open_prefixes={"tags", "attrs", "next"},  # next: a recursive type
    )  # fmt: skip
    assert [fields.has(p) for p in ("customer.address.city", "tags.0", "attrs.color", "customer.nope")] == [
        True, True, True, False
    ]  # fmt: skip


def test_protobuf_paths_cover_every_top_level_message_with_leaves_for_well_known_types() -> None:
    classes = message_classes(order_file("paths.proto"))
    fields = protobuf_field_paths(classes["file"])
    assert fields == SchemaFields(
        paths={
            "id", "sku", "blob", "status", "at", "tags", "counts", "customer", "customer.name",
            "customer.tier", "missing", "missing.name", "missing.tier", "price", "gift", "big",
            "order_id", "reason",
        },
        open_prefixes={"tags", "counts"},
    )  # fmt: skip


JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {"money": {"type": "object", "properties": {"amount": {"type": "number"}}}},
    "properties": {
        "id": {"type": "integer"},
        "price": {"$ref": "#/definitions/money"},
        "lines": {"type": "array", "items": {"type": "object"}},
        "meta": {"type": "object"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "shipping": {"allOf": [{"properties": {"city": {"type": "string"}}}, {"$ref": "http://x/y.json"}]},
    },
}


def test_json_schema_paths_follow_properties_local_refs_and_combinators() -> None:
    fields = json_schema_field_paths(JSON_SCHEMA)
    assert fields == SchemaFields(
        paths={"id", "price", "price.amount", "lines", "meta", "labels", "shipping", "shipping.city"},
        open_prefixes={"lines", "meta", "labels", "shipping"},
    )
    assert [fields.has(p) for p in ("price.amount", "price.currency", "meta.anything", "nope")] == [
        True, False, True, False
    ]  # fmt: skip


def test_a_protobuf_message_becomes_plain_values_keyed_by_proto_field_names() -> None:
    classes = message_classes(order_file("values.proto"))
    order = classes["Order"](
        id=2**40, sku="a-1", blob=b"\x00\xff", status=1, tags=["x", "y"], price=1.5, gift=True, big=2**63
    )
    order.at.FromDatetime(datetime.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=datetime.UTC))
    order.counts["red"] = -3
    order.customer.name = "ann"
    again = classes["Order"].FromString(order.SerializeToString())
    assert message_to_python(again) == {
        "id": 2**40,
        "sku": "a-1",
        "blob": b"\x00\xff",
        "status": "PAID",
        "at": datetime.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=datetime.UTC),
        "tags": ["x", "y"],
        "counts": {"red": -3},
        "customer": {"name": "ann", "tier": 0},
        "missing": None,
        "price": 1.5,
        "gift": True,
        "big": 2**63,
    }
    assert message_to_python(classes["Refund"]()) == {"order_id": 0, "reason": ""}
