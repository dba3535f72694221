"""Protobuf schemas as ``.proto`` source text, the way a Java or Go producer registers them,
and the message classes a producer would generate from them (compiled at test time by
grpc_tools' protoc, so the payloads are exactly what generated code writes).

``SHIPMENT_PROTO`` (package ``eo.text``) has nested messages, an enum, a map, a repeated
field, a ``google.protobuf.Timestamp`` and a schema reference to ``ADDRESS_PROTO``
(imported as ``eo/addr/address.proto``). Message indexes: ``Shipment`` [0], its
``CountsEntry`` (the map's entry, first: protoc puts it where ``counts`` is declared) [0, 0],
``Shipment.Parcel`` [0, 1], ``Note`` [1].
"""

from __future__ import annotations

import importlib.resources
import pathlib
import tempfile
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass
from grpc_tools import protoc

ADDRESS_PROTO = """syntax = "proto3";
package eo.addr;

message Address {
  string city = 1;
  repeated string lines = 2;
}
"""

#: A text schema as a Java producer registers it: nested messages, an enum, a map, a repeated
#: field, a well-known type and a schema reference (``eo/addr/address.proto``).
SHIPMENT_PROTO = """syntax = "proto3";
package eo.text;

import "google/protobuf/timestamp.proto";
import "eo/addr/address.proto";

enum Stage { CREATED = 0; SHIPPED = 1; }

message Shipment {
  int64 id = 1;
  Stage stage = 2;
  google.protobuf.Timestamp at = 3;
  repeated Parcel parcels = 4;
  map<string, int32> counts = 5;
  eo.addr.Address to = 6;
  message Parcel {
    string label = 1;
    Dimensions size = 2;
    message Dimensions { double kg = 1; uint32 cm = 2; }
  }
}

message Note { string text = 1; }
"""


def compiled_files(sources: dict[str, str]) -> list[descriptor_pb2.FileDescriptorProto]:
    """``sources`` (import path -> text) compiled by grpc_tools' protoc, imports first."""
    with tempfile.TemporaryDirectory() as work:
        for name, text in sources.items():
            (pathlib.Path(work) / name).parent.mkdir(parents=True, exist_ok=True)
            (pathlib.Path(work) / name).write_text(text)
        out = f"{work}/set.desc"
        wkt = str(importlib.resources.files("grpc_tools") / "_proto")
        argv = ["protoc", f"-I{work}", f"-I{wkt}", "--include_imports", f"--descriptor_set_out={out}"]
        assert protoc.main([*argv, *sources]) == 0
        return list(descriptor_pb2.FileDescriptorSet.FromString(pathlib.Path(out).read_bytes()).file)


def descriptor_of(text: str, name: str) -> descriptor_pb2.FileDescriptorProto:
    """The ``FileDescriptorProto`` of one self-contained ``.proto`` text, named ``name``."""
    return next(f for f in compiled_files({name: text}) if f.name == name)


def compiled_classes(sources: dict[str, str]) -> dict[str, Any]:
    """Message classes of ``sources`` compiled as a producer's generated classes would be
    (``Shipment``, ``Shipment.Parcel`` and ``Note`` of package ``eo.text``)."""
    pool = descriptor_pool.DescriptorPool()
    for file in compiled_files(sources):
        pool.Add(file)
    names = ("eo.text.Shipment", "eo.text.Shipment.Parcel", "eo.text.Note")
    return {name: GetMessageClass(pool.FindMessageTypeByName(name)) for name in names}


def framed(sid: int, indexes: bytes, message: Any) -> bytes:
    """The Confluent wire format: magic byte, schema id, message indexes, payload."""
    return b"\x00" + sid.to_bytes(4, "big") + indexes + message.SerializeToString()


def register_shipment(client: SchemaRegistryClient, name: str) -> int:
    """``ADDRESS_PROTO`` under its own subject, then ``SHIPMENT_PROTO`` referencing it, as text."""
    client.register_schema(f"{name}-address", Schema(ADDRESS_PROTO, "PROTOBUF"))
    reference = SchemaReference("eo/addr/address.proto", f"{name}-address", 1)
    return client.register_schema(f"{name}-value", Schema(SHIPMENT_PROTO, "PROTOBUF", [reference]))
