"""The Schema Registry over HTTPS with basic auth: the stack's TLS proxy
(:mod:`eo_devtools.stack.registry_tls_proxy`) in front of the real Apicurio registry, read
through the write step's own path (``AIRFLOW_CONN_*`` -> ``schema_registry_from_env`` ->
``open_schema_cache`` -> the Avro decoder). A schema registered through the proxy decodes a
Confluent-framed Avro payload to exact values; the wrong CA, a wrong password and an expired
server certificate each fail with an error naming the connection id and the cause; the
password is in no error text and no log record. ``eo-stack up --tls``'s proxy part runs as a
stack process (password in a mode-600 file, not on its command line) and serves the
``AIRFLOW_CONN_SCHEMA_REGISTRY_TLS`` connection ``conn_env`` exports."""

from __future__ import annotations

import io
import json
import logging
import re
import secrets
import stat
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from airflow_provider_eo.clients.connections import parse_connection
from airflow_provider_eo.formats.registry import (
    RegistryRefused,
    RegistryUnavailable,
    SchemaCache,
    registry_decoder,
)
from airflow_provider_eo.formats.registry.settings import registry_settings
from airflow_provider_eo.spark.driver.task_settings import schema_registry_from_env
from airflow_provider_eo.spark.task.task_schemas import open_schema_cache
from eo_devtools.stack.pki import make_expired_pki, stack_pki
from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.registry_tls_part import TLS_PORT_KEY, RegistryTlsPart
from eo_devtools.stack.registry_tls_proxy import RegistryTlsProxy
from eo_devtools.stack.schema_registry import CCOMPAT_PATH
from eo_devtools.stack.stack import LocalStack
from tests.conftest import StackInfo

pytestmark = pytest.mark.integration

CONN_ID = "schema_registry_tls"
USER = "eo-registry"
PASSWORD = "reg-" + secrets.token_urlsafe(18)
ORDER = (
    '{"type":"record","name":"Order","namespace":"eo.tls",'
    '"fields":[{"name":"id","type":"long"},{"name":"amount","type":"double"},{"name":"sku","type":"string"}]}'
)


def upstream(schema_registry_url: str) -> str:
    return schema_registry_url.removesuffix(CCOMPAT_PATH)


@pytest.fixture(scope="module")
def proxy(stack: StackInfo) -> Iterator[RegistryTlsProxy]:
    pki = stack_pki(stack.state_dir)
    running = RegistryTlsProxy(
        find_free_port(), upstream(stack.schema_registry_url), USER, PASSWORD, pki.server_cert, pki.server_key
    ).start()
    yield running
    running.stop()


def connection(url: str, ca: Path, password: str) -> str:
    """The ``AIRFLOW_CONN_*`` value of an https registry connection (JSON form)."""
    extra = {"url": url + CCOMPAT_PATH, "ssl.ca.location": str(ca), "max.retries": "0"}
    return json.dumps({"conn_type": "http", "login": USER, "password": password, "extra": extra})


def schema_cache(monkeypatch: pytest.MonkeyPatch, value: str) -> SchemaCache:
    """The write step's cache, built from ``AIRFLOW_CONN_SCHEMA_REGISTRY_TLS=value``."""
    monkeypatch.setenv("AIRFLOW_CONN_" + CONN_ID.upper(), value)
    spec = SimpleNamespace(name="orders", mapping=SimpleNamespace(value_format="avro", key_format="bytes"))
    cache = open_schema_cache(schema_registry_from_env(spec, CONN_ID))  # type: ignore[arg-type]
    assert cache is not None
    return cache


def framed(schema_id: int, record: dict[str, object]) -> bytes:
    """A Confluent-framed Avro payload: magic byte 0, the schema id, the Avro body."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(json.loads(ORDER)), record)
    return b"\x00" + struct.pack(">I", schema_id) + body.getvalue()


@pytest.fixture(scope="module")
def schema_id(proxy: RegistryTlsProxy, stack: StackInfo) -> Iterator[int]:
    """``ORDER`` registered through the proxy (basic auth, the stack CA)."""
    ca = stack_pki(stack.state_dir).ca
    conf = {
        "url": proxy.url + CCOMPAT_PATH,
        "basic.auth.user.info": f"{USER}:{PASSWORD}",
        "ssl.ca.location": str(ca),
    }
    client = SchemaRegistryClient(conf)
    subject = f"registry-tls-{uuid.uuid4().hex[:10]}-value"
    registered = client.register_schema(subject, Schema(ORDER, "AVRO"))
    yield registered
    client.delete_subject(subject)
    client.delete_subject(subject, permanent=True)
    client.close()


def where(proxy_url: str) -> str:
    return f"Schema Registry {proxy_url}{CCOMPAT_PATH} (connection {CONN_ID!r})"


def test_a_schema_registered_through_the_proxy_decodes_a_record(
    proxy: RegistryTlsProxy, schema_id: int, stack: StackInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = schema_cache(monkeypatch, connection(proxy.url, stack_pki(stack.state_dir).ca, PASSWORD))
    try:
        decode = registry_decoder("avro", "value", cache)
        record = {"id": 7, "amount": 12.5, "sku": "A-1"}
        assert decode(framed(schema_id, record)) == record
        assert cache.schema_ids == [schema_id]
    finally:
        cache.close()


def test_the_wrong_ca_fails_naming_the_connection(
    proxy: RegistryTlsProxy, schema_id: int, stack: StackInfo, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.DEBUG)
    cache = schema_cache(monkeypatch, connection(proxy.url, stack_pki(stack.state_dir).other_ca, PASSWORD))
    with pytest.raises(RegistryUnavailable) as info:
        registry_decoder("avro", "value", cache)(framed(schema_id, {"id": 1, "amount": 1.0, "sku": "x"}))
    cache.close()
    message = str(info.value)
    assert re.fullmatch(
        re.escape(
            f"{where(proxy.url)} unreachable for schema id {schema_id}: ConnectError: [SSL: "
            "CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate"
        )
        + r" \(_ssl\.c:\d+\)",
        message,
    )
    assert PASSWORD not in message and PASSWORD not in caplog.text


def test_a_wrong_password_is_refused_401(
    proxy: RegistryTlsProxy, schema_id: int, stack: StackInfo, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.DEBUG)
    refused = proxy.refused
    cache = schema_cache(monkeypatch, connection(proxy.url, stack_pki(stack.state_dir).ca, PASSWORD + "x"))
    with pytest.raises(RegistryRefused) as info:
        registry_decoder("avro", "value", cache)(framed(schema_id, {"id": 1, "amount": 1.0, "sku": "x"}))
    cache.close()
    message = str(info.value)
    assert (
        message == f"{where(proxy.url)} refused schema id {schema_id}: HTTP 401, error code 401: Unauthorized"
    )
    assert proxy.refused == refused + 1
    assert PASSWORD not in message and PASSWORD not in caplog.text


def test_an_expired_server_certificate_fails_naming_the_connection(
    stack: StackInfo, schema_id: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.DEBUG)
    expired = make_expired_pki(tmp_path / "pki")
    stale = RegistryTlsProxy(
        find_free_port(),
        upstream(stack.schema_registry_url),
        USER,
        PASSWORD,
        expired.server_cert,
        expired.server_key,
    ).start()
    try:
        cache = schema_cache(monkeypatch, connection(stale.url, expired.ca, PASSWORD))
        with pytest.raises(RegistryUnavailable) as info:
            registry_decoder("avro", "value", cache)(framed(schema_id, {"id": 1, "amount": 1.0, "sku": "x"}))
        cache.close()
    finally:
        stale.stop()
    message = str(info.value)
    assert re.fullmatch(
        re.escape(
            f"{where(stale.url)} unreachable for schema id {schema_id}: ConnectError: [SSL: "
            "CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired"
        )
        + r" \(_ssl\.c:\d+\)",
        message,
    )
    assert PASSWORD not in message and PASSWORD not in caplog.text


def test_the_stack_proxy_process_serves_the_env_connection(
    stack: StackInfo, schema_id: int, caplog: pytest.LogCaptureFixture
) -> None:
    """``eo-stack up --tls``'s proxy part as a stack process; ``conn_env`` exports its connection."""
    caplog.set_level(logging.DEBUG)
    local = LocalStack(stack.state_dir)
    part = RegistryTlsPart(stack.state_dir)
    started = TLS_PORT_KEY not in local._recorded_ports()  # a reused stack may run it (up --tls)
    part.start(local._recorded_ports(), local._write_ports)
    try:
        recorded = local._recorded_ports()
        value = local.conn_env()["AIRFLOW_CONN_SCHEMA_REGISTRY_TLS"]
        service = part.service(recorded)
        password = service.password()
        settings = registry_settings(parse_connection(CONN_ID, value))
        assert (settings.url, settings.user_info, settings.ssl_ca_location) == (
            f"https://127.0.0.1:{recorded[TLS_PORT_KEY]}{CCOMPAT_PATH}",
            f"eo-registry:{password}",
            str(stack_pki(stack.state_dir).ca),
        )
        assert stat.S_IMODE(service.users_file.stat().st_mode) == 0o600
        assert password not in " ".join(service.argv())
        cache = SchemaCache.from_settings(settings)
        try:
            record = {"id": 8, "amount": 0.25, "sku": "B-2"}
            assert registry_decoder("avro", "value", cache)(framed(schema_id, record)) == record
        finally:
            cache.close()
        assert local.status()["schema-registry-tls"]["healthy"] is True
    finally:
        if started:
            part.stop(local._recorded_ports(), local._write_ports)
    assert (TLS_PORT_KEY in local._recorded_ports()) is not started
    assert password not in service.log_path.read_text() and password not in caplog.text
