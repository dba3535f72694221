"""The stack's Schema Registry (Apicurio Registry, Confluent-compatible API) as clients use it.

Through ``eo-stack env``'s ``schema_registry`` connection, read by Airflow's own
``Connection``; with the compatibility level the stack set; with confluent-kafka's
``SchemaRegistryClient``, the client the provider decodes with.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from airflow.models.connection import Connection
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from eo_devtools.stack.class_archive import archive_path
from eo_devtools.stack.jvm_artifacts import java_binary, lib_dir, runner_jar
from tests.conftest import StackInfo

pytestmark = pytest.mark.integration

ORDER_V1 = (
    '{"type":"record","name":"Order","namespace":"eo.test",'
    '"fields":[{"name":"id","type":"long"},{"name":"amount","type":"double"}]}'
)
ORDER_V2_NO_DEFAULT = (
    '{"type":"record","name":"Order","namespace":"eo.test","fields":[{"name":"id","type":"long"},'
    '{"name":"amount","type":"double"},{"name":"currency","type":"string"}]}'
)


@pytest.fixture
def subject(schema_registry_url: str) -> Iterator[str]:
    """A fresh ``<topic>-value`` subject, deleted (soft, then permanently) after the test."""
    name = f"registry-stack-{uuid.uuid4().hex[:10]}-value"
    yield name
    client = SchemaRegistryClient({"url": schema_registry_url})
    if name in client.get_subjects():
        client.delete_subject(name)
        client.delete_subject(name, permanent=True)


def test_env_schema_registry_connection_resolves_to_the_stack_registry(stack: StackInfo) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "eo_devtools.stack.cli", "env", "--state-dir", str(stack.state_dir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    exported = dict(shlex.split(line)[1].split("=", 1) for line in result.stdout.splitlines())
    port = int(stack.schema_registry_url.split(":")[2].split("/")[0])
    assert json.loads(exported["AIRFLOW_CONN_SCHEMA_REGISTRY"]) == {
        "conn_type": "http",
        "host": "127.0.0.1",
        "port": port,
        "schema": "http",
        "extra": {"path": "/apis/ccompat/v7"},
    }
    conn = Connection.from_json(exported["AIRFLOW_CONN_SCHEMA_REGISTRY"], conn_id="schema_registry")
    resolved = f"{conn.schema}://{conn.host}:{conn.port}{conn.extra_dejson['path']}"
    assert resolved == stack.schema_registry_url == f"http://127.0.0.1:{port}/apis/ccompat/v7"
    assert (conn.login, conn.password) == (None, None)


def test_the_registry_is_the_cached_runner_mapping_its_class_archive(stack: StackInfo) -> None:
    pid = int((stack.state_dir / "pids" / "schema-registry.pid").read_text())
    argv = (Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0"))[:-1]
    archive = archive_path(lib_dir("schema-registry"), java_binary())
    assert archive.is_file()
    assert argv[:2] == [java_binary(), f"-XX:SharedArchiveFile={archive}"]
    assert argv[-2:] == ["-jar", str(runner_jar("schema-registry"))]
    assert "-Xmx256m" in argv and "-Dquarkus.http.host=127.0.0.1" in argv
    assert os.readlink(f"/proc/{pid}/cwd") == str(stack.state_dir / "schema-registry")
    # Java 17 drops an archive it cannot use silently; one it uses is mapped into the process.
    assert str(archive) in Path(f"/proc/{pid}/maps").read_text()


def test_global_compatibility_is_the_backward_level_the_stack_set(schema_registry_url: str) -> None:
    with urllib.request.urlopen(f"{schema_registry_url}/config", timeout=10) as response:
        assert json.loads(response.read()) == {"compatibilityLevel": "BACKWARD"}
    assert SchemaRegistryClient({"url": schema_registry_url}).get_compatibility() == "BACKWARD"


def test_avro_schema_registered_with_confluent_client_comes_back_by_id(
    schema_registry_url: str, subject: str
) -> None:
    client = SchemaRegistryClient({"url": schema_registry_url})
    schema_id = client.register_schema(subject, Schema(ORDER_V1, "AVRO"))
    fresh = SchemaRegistryClient({"url": schema_registry_url})  # no cache: a real fetch by id
    fetched = fresh.get_schema(schema_id)
    assert (fetched.schema_type, fetched.schema_str) == ("AVRO", ORDER_V1)
    latest = fresh.get_latest_version(subject)
    assert (latest.schema_id, latest.subject, latest.version) == (schema_id, subject, 1)
    assert fresh.register_schema(subject, Schema(ORDER_V1, "AVRO")) == schema_id  # idempotent
    assert fresh.get_subjects().count(subject) == 1


def test_backward_compatibility_refuses_a_new_field_without_default(
    schema_registry_url: str, subject: str
) -> None:
    client = SchemaRegistryClient({"url": schema_registry_url})
    schema_id = client.register_schema(subject, Schema(ORDER_V1, "AVRO"))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(ORDER_V2_NO_DEFAULT, "AVRO"))
    assert refused.value.http_status_code == 409
    assert client.get_versions(subject) == [1]
    assert client.get_latest_version(subject).schema_id == schema_id
