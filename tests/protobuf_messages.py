"""Protobuf message classes built at test time from a FileDescriptorProto (no protoc, no
generated code): what a producer's generated classes would be, for the serializer's sake.

``order_file(name)`` declares, in package ``eo.test``::

    enum Status { NEW = 0; PAID = 1; }
    message Order {                       // message index [0]
      int64 id = 1; string sku = 2; bytes blob = 3; Status status = 4;
      google.protobuf.Timestamp at = 5; repeated string tags = 6;
      map<string, int64> counts = 7; Customer customer = 8; Customer missing = 9;
      double price = 10; bool gift = 11; uint64 big = 12;
      message Customer { string name = 1; int32 tier = 2; }   // message index [0, 0]
    }
    message Refund { int64 order_id = 1; string reason = 2; }  // message index [1]
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
from google.protobuf.message_factory import GetMessageClass

F = descriptor_pb2.FieldDescriptorProto
PACKAGE = "eo.test"


def _field(
    message: Any, name: str, number: int, kind: int, type_name: str = "", repeated: bool = False
) -> None:
    label = F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL
    added = message.field.add(name=name, number=number, type=kind, label=label)
    if type_name:
        added.type_name = type_name


def order_file(name: str) -> descriptor_pb2.FileDescriptorProto:
    """The file described in the module docstring, named ``name`` (unique per test run)."""
    file = descriptor_pb2.FileDescriptorProto(name=name, package=PACKAGE, syntax="proto3")
    file.dependency.append("google/protobuf/timestamp.proto")
    status = file.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="PAID", number=1)
    order = file.message_type.add(name="Order")
    customer = order.nested_type.add(name="Customer")
    _field(customer, "name", 1, F.TYPE_STRING)
    _field(customer, "tier", 2, F.TYPE_INT32)
    entry = order.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    _field(entry, "key", 1, F.TYPE_STRING)
    _field(entry, "value", 2, F.TYPE_INT64)
    _field(order, "id", 1, F.TYPE_INT64)
    _field(order, "sku", 2, F.TYPE_STRING)
    _field(order, "blob", 3, F.TYPE_BYTES)
    _field(order, "status", 4, F.TYPE_ENUM, f".{PACKAGE}.Status")
    _field(order, "at", 5, F.TYPE_MESSAGE, ".google.protobuf.Timestamp")
    _field(order, "tags", 6, F.TYPE_STRING, repeated=True)
    _field(order, "counts", 7, F.TYPE_MESSAGE, f".{PACKAGE}.Order.CountsEntry", repeated=True)
    _field(order, "customer", 8, F.TYPE_MESSAGE, f".{PACKAGE}.Order.Customer")
    _field(order, "missing", 9, F.TYPE_MESSAGE, f".{PACKAGE}.Order.Customer")
    _field(order, "price", 10, F.TYPE_DOUBLE)
    _field(order, "gift", 11, F.TYPE_BOOL)
    _field(order, "big", 12, F.TYPE_UINT64)
    refund = file.message_type.add(name="Refund")
    _field(refund, "order_id", 1, F.TYPE_INT64)
    _field(refund, "reason", 2, F.TYPE_STRING)
    return file


def message_classes(file: descriptor_pb2.FileDescriptorProto) -> dict[str, Any]:
    """``{"Order": cls, "Order.Customer": cls, "Refund": cls}`` from a fresh pool."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(file)
    loaded = pool.FindFileByName(file.name)
    return {
        name: GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in ("Order", "Order.Customer", "Refund")
    } | {"file": loaded}
