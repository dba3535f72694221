"""build_decoder: plain formats never load the Schema Registry code."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.formats.decoder_factory import build_decoder
from airflow_provider_eo.spark.task.mapping import build_mapper
from airflow_provider_eo.spark.records import KafkaRecord

for fmt in ("json", "string", "bytes"):
    build_decoder(fmt, "value", None)
    build_decoder(fmt, "key", None)
mapper = build_mapper(MappingSpec(key_format="json", row_key="{key.id}"), "d")
assert mapper.map(KafkaRecord("t", 0, 0, b'{"id": 1}', b'{"a": 2}')).row == b"1"
print(sorted(name for name in sys.modules if name.startswith("airflow_provider_eo.formats")))
"""


def test_plain_formats_never_import_the_registry_package() -> None:
    result = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True)
    loaded = [
        "airflow_provider_eo.formats",
        "airflow_provider_eo.formats.decoder_factory",
        "airflow_provider_eo.formats.plain",
    ]
    assert result.stdout.strip() == repr(loaded)


AVRO_PROGRAM = """
import sys
from confluent_kafka.schema_registry import SchemaRegistryClient
from airflow_provider_eo.formats.decoder_factory import build_decoder
from airflow_provider_eo.formats.registry.schema_cache import SchemaCache

cache = SchemaCache(SchemaRegistryClient({"url": "http://127.0.0.1:9"}))
decoder = build_decoder("avro", "value", cache, {"id": None})
print(type(decoder).__name__, decoder.fields)
print(sorted(name for name in sys.modules if name.endswith(("_schema_decoder", "protobuf_decoder"))))
print("jsonschema" in sys.modules, "google.protobuf" in sys.modules)
"""


def test_an_avro_decoder_never_imports_the_other_registry_decoders() -> None:
    result = subprocess.run([sys.executable, "-c", AVRO_PROGRAM], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == ["AvroDecoder {'id': None}", "[]", "False False"]
