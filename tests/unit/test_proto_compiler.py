"""``.proto`` text compiled by the real protoc (grpc_tools, in-process), without a registry:
the cases the registry never lets through (Apicurio refuses text that does not parse)."""

from __future__ import annotations

import os

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference

from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.registry.proto_compiler import compile_proto_text

WHERE = "value: schema id 7"


def compile_reason(schema: Schema) -> str:
    with pytest.raises(BadRecord) as info:
        compile_proto_text(schema, None, WHERE, "registry-schema.proto")
    return info.value.reason


def test_a_syntax_error_is_a_bad_record_quoting_protocs_first_error_line() -> None:
    text = 'syntax = "proto3";\npackage eo.text;\nmessage M { int64 id = 1 string s = 2; }\nmessage {\n'
    assert compile_reason(Schema(text, "PROTOBUF")) == (
        "value: schema id 7: the registry's .proto text does not compile: "
        'registry-schema.proto:3:26: Expected ";".'
    )


def test_a_reference_name_outside_the_import_root_is_refused() -> None:
    text = 'syntax = "proto3";\nimport "../x.proto";\nmessage M { int64 id = 1; }\n'
    schema = Schema(text, "PROTOBUF", [SchemaReference("../x.proto", "x-value", 1)])
    assert compile_reason(schema) == (
        "value: schema id 7: schema reference name '../x.proto' is not a relative .proto import path"
    )


def test_a_text_schema_compiles_with_the_well_known_types_and_stderr_is_restored() -> None:
    text = (
        'syntax = "proto3";\npackage eo.text;\nimport "google/protobuf/timestamp.proto";\n'
        "message M { google.protobuf.Timestamp at = 1; map<string, int64> n = 2; }\n"
    )
    before = os.fstat(2)
    pool, main = compile_proto_text(Schema(text, "PROTOBUF"), None, WHERE, "registry-schema.proto")
    after = os.fstat(2)
    fields = [f.name for f in pool.FindMessageTypeByName("eo.text.M").fields]
    assert (main.name, [m.name for m in main.message_type], fields) == (
        "registry-schema.proto",
        ["M"],
        ["at", "n"],
    )
    assert (before.st_ino, before.st_dev) == (after.st_ino, after.st_dev)
