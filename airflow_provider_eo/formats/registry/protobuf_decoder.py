"""Protobuf in the Confluent wire format -> plain Python values, with the writer's schema.

confluent-kafka 2.16.1's ``ProtobufDeserializer`` cannot decode without a generated
class: it is built with one ``message_type`` and parses every payload into that class
(the writer schema it fetches is only used for rules and migrations). A pipeline has no
generated classes, so this decoder builds the class from the writer schema instead,
the way the deserializer builds its descriptor pools: the schema is fetched with
``format=serialized`` (a base64 ``FileDescriptorProto``), its references are resolved
through confluent's ``_resolve_named_schema`` into a ``DescriptorPool`` seeded with the
well-known types (``_init_pool``), and the message is found by the record's message
indexes. The class (``GetMessageClass``) is built once per schema id and message path.

A schema the registry returns as ``.proto`` source text (Apicurio returns a schema as
it was registered: Confluent's Java serializer, Go producers and most users register text)
is compiled with protoc in-process instead, once per schema id:
:mod:`~airflow_provider_eo.formats.registry.proto_compiler`.

Values: :mod:`~airflow_provider_eo.formats.registry.protobuf_values`.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, cast

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry._sync.protobuf import _resolve_named_schema
from confluent_kafka.schema_registry.common.protobuf import _init_pool
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor_pool import DescriptorPool
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from airflow_provider_eo.errors import BadRecord, RegistryAccessError, error_text
from airflow_provider_eo.formats.registry.proto_compiler import compile_proto_text, is_base64
from airflow_provider_eo.formats.registry.protobuf_values import message_to_python
from airflow_provider_eo.formats.registry.schema_cache import SchemaCache
from airflow_provider_eo.formats.registry.wire_format import parse_header, read_message_indexes

MessageClass = type[Message]
#: The name a ``.proto`` text schema is compiled under (protoc's error lines start with it).
TEXT_SCHEMA_FILE = "registry-schema.proto"


class ProtobufDecoder:
    """``decode(data) -> dict`` for one part (``"value"``/``"key"``) of a pipeline's records."""

    def __init__(self, part: str, cache: SchemaCache) -> None:
        self.part = part
        self.cache = cache
        self._classes: dict[tuple[int, tuple[int, ...]], MessageClass] = {}

    def __call__(self, data: bytes) -> Any:
        header = parse_header(data, self.part)
        schema_id = header.schema_id
        indexes, start = read_message_indexes(data, header.payload_start, self.part, schema_id)
        key = (schema_id, tuple(indexes))
        message_class = self._classes.get(key)
        if message_class is None:
            message_class = self._classes[key] = self._class_of(schema_id, indexes)
        try:
            message = message_class.FromString(data[start:])
            return message_to_python(message)
        except Exception as exc:  # DecodeError, an out-of-range Timestamp, ...
            raise BadRecord(
                f"{self.part}: protobuf payload of schema id {schema_id} (message "
                f"{message_class.DESCRIPTOR.full_name}) does not decode: {error_text(exc)}"
            ) from None

    def _class_of(self, schema_id: int, indexes: list[int]) -> MessageClass:
        pool, file_proto = self.cache.parsed(schema_id, "protobuf", lambda: self._parse(schema_id))
        path = ".".join(map(str, indexes))
        return self.cache.parsed(
            schema_id, f"protobuf:{path}", lambda: self._message_class(schema_id, pool, file_proto, indexes)
        )

    def _parse(self, schema_id: int) -> tuple[DescriptorPool, descriptor_pb2.FileDescriptorProto]:
        where = f"{self.part}: schema id {schema_id}"
        schema = self.cache.schema(schema_id, self.part, fmt="serialized")
        if schema.schema_type != "PROTOBUF":
            raise BadRecord(
                f"{where} is a {schema.schema_type or 'AVRO'} schema, the pipeline's {self.part} "
                "format is protobuf"
            )
        return load_descriptors(schema, self.cache, where)

    def _message_class(
        self,
        schema_id: int,
        pool: DescriptorPool,
        file_proto: descriptor_pb2.FileDescriptorProto,
        indexes: list[int],
    ) -> MessageClass:
        names: list[str] = []
        scope: Any = file_proto.message_type
        for index in indexes:
            if index >= len(scope):
                raise BadRecord(
                    f"{self.part}: protobuf schema id {schema_id}: message indexes {indexes} name no message "
                    f"of the schema"
                )
            names.append(scope[index].name)
            scope = scope[index].nested_type
        full_name = ".".join(filter(None, [file_proto.package, *names]))
        return cast(MessageClass, GetMessageClass(pool.FindMessageTypeByName(full_name)))


def load_descriptors(
    schema: Schema, client: Any, where: str
) -> tuple[DescriptorPool, descriptor_pb2.FileDescriptorProto]:
    """A pool holding ``schema``'s file (as ``default``; a ``.proto`` text schema as
    :data:`TEXT_SCHEMA_FILE`), its references (fetched through ``client``: a
    :class:`SchemaCache` or a ``SchemaRegistryClient``) and the well-known types.

    A schema string that is not base64 is ``.proto`` text and is compiled
    (:func:`~airflow_provider_eo.formats.registry.proto_compiler.compile_proto_text`).
    Raises BadRecord (prefixed with ``where``) when the schema or a reference does not load
    or compile.
    """
    if not is_base64(schema.schema_str or ""):
        return compile_proto_text(schema, client, where, TEXT_SCHEMA_FILE)
    file_proto = descriptor_from_base64(schema.schema_str or "", where)
    try:
        pool = DescriptorPool()
        _init_pool(pool)
        _resolve_named_schema(schema, cast(SchemaRegistryClient, client), pool)
        pool.Add(file_proto)
    except RegistryAccessError:
        raise
    except Exception as exc:  # a reference that does not parse, a conflicting definition, ...
        raise BadRecord(f"{where}: the registry's Protobuf schema does not load: {exc}") from None
    return pool, file_proto


def descriptor_from_base64(schema_str: str, where: str) -> descriptor_pb2.FileDescriptorProto:
    """The ``FileDescriptorProto`` of a base64 schema string (named ``default``, as confluent names it).

    Raises BadRecord when the string is not a base64 descriptor.
    """
    try:
        raw = base64.b64decode(schema_str.encode("ascii"), validate=True)
        file_proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise BadRecord(
            f"{where}: the registry's Protobuf schema is not a base64 FileDescriptorProto: {exc}"
        ) from None
    file_proto.name = "default"
    return file_proto
