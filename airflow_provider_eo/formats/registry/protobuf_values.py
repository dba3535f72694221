"""A decoded Protobuf message -> plain Python values, driven by its descriptor.

Every field of the message's descriptor is present in the dict, keyed by its proto
field name (not the JSON camelCase name):

* scalars: int32/64, uint32/64, sint, fixed -> ``int`` (64-bit ones too, never strings);
  float/double -> ``float``; bool; string -> ``str``; bytes -> ``bytes``;
  an unset proto3 scalar is its default (``0``, ``""``, ``False``, ``b""``);
* enum -> the value's name; a number the writer schema does not name -> the ``int``;
* repeated -> ``list``; map -> ``dict`` (keys str/int/bool as declared);
* a message field -> ``dict`` of its fields, or ``None`` when unset (fields with presence:
  messages, ``optional`` and oneof members, are ``None`` when unset);
* well-known types: ``google.protobuf.Timestamp`` -> tz-aware UTC ``datetime`` (microsecond
  precision: nanoseconds below a microsecond are dropped); the wrappers
  (``Int64Value``, ``StringValue``, ...) -> the wrapped value; ``Struct`` / ``Value`` /
  ``ListValue`` -> dict / JSON value / list; ``google.type.Date`` -> ``date``;
  ``confluent.type.Decimal`` -> ``Decimal``. Other messages (``Duration``, ``Any``, ...) are
  dicts of their fields.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry.common.protobuf import protobuf_to_decimal
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
WRAPPERS = frozenset(
    f"google.protobuf.{name}"
    for name in (
        "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value",
        "BoolValue", "StringValue", "BytesValue",
    )
)  # fmt: skip
JSON_TYPES = frozenset({"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"})


def message_to_python(message: Message) -> Any:
    """The plain value of ``message`` (a dict, or a well-known type's value)."""
    descriptor = message.DESCRIPTOR
    special = WELL_KNOWN.get(descriptor.full_name)
    if special is not None:
        return special(message)
    return {field.name: _field_value(message, field) for field in descriptor.fields}


def _field_value(message: Message, field: FieldDescriptor) -> Any:
    value = getattr(message, field.name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return _map_value(value, field.message_type)
    if field.is_repeated:
        return [_single(item, field) for item in value]
    if field.has_presence and not message.HasField(field.name):
        return None
    return _single(value, field)


def _map_value(value: Any, entry: Descriptor) -> dict[Any, Any]:
    value_field = entry.fields_by_name["value"]
    return {key: _single(item, value_field) for key, item in value.items()}


def _single(value: Any, field: FieldDescriptor) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE or field.type == FieldDescriptor.TYPE_GROUP:
        return message_to_python(value)
    if field.type == FieldDescriptor.TYPE_ENUM:
        named = field.enum_type.values_by_number.get(value)
        return named.name if named is not None else int(value)
    return value


def _timestamp(message: Any) -> datetime.datetime:
    return EPOCH + datetime.timedelta(seconds=message.seconds, microseconds=message.nanos // 1000)


def _wrapped(message: Any) -> Any:
    return message.value


def _json_value(message: Message) -> Any:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _date(message: Any) -> datetime.date | dict[str, int]:
    try:
        return datetime.date(message.year, message.month, message.day)
    except ValueError:  # google.type.Date allows year 0 / month 0 / day 0 (partial dates)
        return {"year": message.year, "month": message.month, "day": message.day}


WELL_KNOWN: dict[str, Callable[[Any], Any]] = {
    "google.protobuf.Timestamp": _timestamp,
    **dict.fromkeys(WRAPPERS, _wrapped),
    **dict.fromkeys(JSON_TYPES, _json_value),
    "google.type.Date": _date,
    "confluent.type.Decimal": protobuf_to_decimal,
}
