"""The registry connection -> RegistrySettings -> confluent client conf; secrets stay hidden;
the driver resolves the connection only for registry formats; the Epochs page shows schema ids."""

from __future__ import annotations

import json
import pickle
from types import SimpleNamespace

import pytest

from airflow_provider_eo.clients.connections import ConnectionNotFound, EoConnection, parse_connection
from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.formats.registry.settings import (
    RegistrySettings,
    registry_formats,
    registry_settings,
)
from airflow_provider_eo.operators.application_connections import registry_connection_env
from airflow_provider_eo.plugins.page import _schema_ids
from airflow_provider_eo.spark.driver.task_settings import schema_registry_from_env

SECRET = "s3cr3t-pw"


@pytest.mark.parametrize(
    ("definition", "url"),
    [
        ("http://127.0.0.1:18081/apis%2Fccompat%2Fv7", "http://127.0.0.1:18081/apis/ccompat/v7"),
        ("https://reg.example.com:443/apis%2Fccompat%2Fv7", "https://reg.example.com:443/apis/ccompat/v7"),
        (
            json.dumps({"conn_type": "http", "host": "reg", "port": 8081, "schema": "https",
                        "extra": {"path": "/apis/ccompat/v7"}}),
            "https://reg:8081/apis/ccompat/v7",
        ),
        (json.dumps({"conn_type": "eo_schema_registry", "host": "reg", "port": 8081}), "http://reg:8081"),
        (json.dumps({"conn_type": "http", "host": "https://reg", "schema": "ccompat"}), "https://reg/ccompat"),
        (json.dumps({"conn_type": "http", "extra": {"url": "http://a:1,http://b:2"}}), "http://a:1,http://b:2"),
    ],
)  # fmt: skip
def test_the_url_comes_from_the_connection_fields(definition: str, url: str) -> None:
    assert registry_settings(parse_connection("schema_registry", definition)).url == url


def test_basic_auth_and_tls_reach_the_client_conf_and_never_the_repr() -> None:
    conn = EoConnection(
        conn_id="schema_registry",
        conn_type="https",
        host="reg",
        port=8081,
        login="eo",
        password=SECRET,
        schema="apis/ccompat/v7",
        extra={
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.certificate.location": "/etc/c.pem",
            "ssl.key.location": "/etc/k.pem",
            "ssl.key.password": "key-" + SECRET,
            "timeout": 3,
        },
    )
    settings = registry_settings(conn)
    assert settings.client_conf() == {
        "url": "https://reg:8081/apis/ccompat/v7",
        "basic.auth.user.info": f"eo:{SECRET}",
        "ssl.ca.location": "/etc/ca.pem",
        "ssl.certificate.location": "/etc/c.pem",
        "ssl.key.location": "/etc/k.pem",
        "ssl.key.password": "key-" + SECRET,
        "timeout": 3.0,
        "max.retries": 2,
        "retries.wait.ms": 200,
        "retries.max.wait.ms": 2000,
    }
    assert repr(settings) == (
        "RegistrySettings(url='https://reg:8081/apis/ccompat/v7', auth=basic, ssl_ca_location='/etc/ca.pem', "
        "ssl_certificate_location='/etc/c.pem', ssl_key_location='/etc/k.pem')"
    )
    assert pickle.loads(pickle.dumps(settings)) == settings  # travels to executors


def test_credentials_inside_the_url_are_not_shown() -> None:
    settings = RegistrySettings(url=f"http://eo:{SECRET}@reg:8081/apis/ccompat/v7,http://b:2")
    assert (settings.display_url, SECRET in repr(settings)) == (
        "http://reg:8081/apis/ccompat/v7,http://b:2",
        False,
    )


def test_a_connection_without_host_or_url_names_the_id_only() -> None:
    with pytest.raises(
        ValueError, match=r"^Schema Registry connection 'sr': set host \(or 'url' in extra\)$"
    ):
        registry_settings(EoConnection(conn_id="sr", password=SECRET))


def test_only_registry_formats_need_the_registry() -> None:
    plain = MappingSpec()
    mixed = MappingSpec(value_format="avro", key_format="protobuf")
    key_only = MappingSpec(key_format="json_schema")
    assert (registry_formats(plain), registry_formats(mixed), registry_formats(key_only)) == (
        {},
        {"value": "avro", "key": "protobuf"},
        {"key": "json_schema"},
    )


def test_the_driver_names_the_pipeline_and_the_connection_when_the_registry_is_missing() -> None:
    spec = SimpleNamespace(name="orders", mapping=MappingSpec(value_format="avro"))
    with pytest.raises(ConnectionNotFound) as info:
        schema_registry_from_env(spec, "sr_missing")  # type: ignore[arg-type]
    assert str(info.value) == (
        "pipeline 'orders': value_format avro needs the Schema Registry connection 'sr_missing': "
        "connection 'sr_missing' not found: AIRFLOW_CONN_SR_MISSING is not set"
    )
    plain = SimpleNamespace(name="orders", mapping=SimpleNamespace(value_format="json", key_format="bytes"))
    assert schema_registry_from_env(plain, "sr_missing") is None  # type: ignore[arg-type]


def test_the_driver_resolves_the_registry_from_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SR_HERE", f"http://eo:{SECRET}@reg:8081/apis%2Fccompat%2Fv7")
    spec = SimpleNamespace(name="orders", mapping=SimpleNamespace(value_format="json", key_format="avro"))
    settings = schema_registry_from_env(spec, "sr_here")  # type: ignore[arg-type]
    assert settings == RegistrySettings(
        url="http://reg:8081/apis/ccompat/v7", user_info=f"eo:{SECRET}", conn_id="sr_here"
    )
    assert settings.where == "http://reg:8081/apis/ccompat/v7 (connection 'sr_here')"
    assert SECRET not in repr(settings)


def test_the_epochs_page_shows_the_schema_ids_of_an_epoch() -> None:
    assert _schema_ids({"records": 3, "schema_ids": [3, 12]}) == (
        '<div class="schema-ids nw" data-schema-ids="3,12">schema ids 3, 12</div>'
    )
    assert (_schema_ids({"records": 3, "schema_ids": []}), _schema_ids(None)) == ("", "")


def test_the_write_operator_hands_over_the_registry_only_for_registry_formats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    avro = SimpleNamespace(mapping=SimpleNamespace(value_format="avro", key_format="bytes"))
    plain = SimpleNamespace(mapping=SimpleNamespace(value_format="json", key_format="bytes"))
    with pytest.raises(ConfigError) as info:
        registry_connection_env("orders", avro, "sr_nowhere")  # type: ignore[arg-type]
    assert str(info.value) == (
        "pipeline orders: value_format avro needs the Schema Registry connection 'sr_nowhere': "
        "The conn_id `sr_nowhere` isn't defined"
    )
    definition = json.dumps({"conn_type": "http", "host": "reg", "port": 8081, "password": SECRET})
    monkeypatch.setenv("AIRFLOW_CONN_SR_THERE", definition)
    env = registry_connection_env("orders", avro, "sr_there")  # type: ignore[arg-type]
    assert (list(env), json.loads(env["AIRFLOW_CONN_SR_THERE"])["password"]) == (
        ["AIRFLOW_CONN_SR_THERE"],
        SECRET,
    )
    assert registry_connection_env("orders", plain, "sr_there") == {}  # type: ignore[arg-type]
