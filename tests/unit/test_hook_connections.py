"""Connection resolution inside/outside Airflow, client settings and UI metadata (no services)."""

from __future__ import annotations

import json

import pytest
from airflow.sdk import Connection

from airflow_provider_eo.clients.connection_settings import (
    hbase_connection_kwargs,
    kafka_client_config,
    postgres_dsn,
)
from airflow_provider_eo.clients.connections import (
    ConnectionNotFound,
    EoConnection,
    connection_from_env,
    parse_connection,
)
from airflow_provider_eo.hooks.base import EoHook
from airflow_provider_eo.hooks.hbase import EoHBaseHook
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook

DEFINITIONS = [
    "postgresql://eo:p%40ss%2Fw%3Ard@db.example.com:5433/ledger?sslmode=require",
    "eo-hbase://hbase.local:9091?__extra__=%7B%22transport%22%3A+%22framed%22%2C+%22timeout_ms%22%3A+5%7D",
    "kafka://?__extra__=%7B%22bootstrap.servers%22%3A%22b1%3A9092%22%7D",
    json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": "b:1", "sasl.password": "s3cret"}}),
    json.dumps(
        {
            "conn_type": "postgres",
            "host": "h",
            "port": "5432",
            "login": "u",
            "password": "p@:/",
            "schema": "d",
        }
    ),
]


def _airflow_parse(value: str) -> EoConnection:
    conn = Connection.from_json(value, "x") if value.startswith("{") else Connection.from_uri(value, "x")
    return EoConnection(
        conn_id="x",
        conn_type=conn.conn_type,
        host=conn.host or None,
        port=conn.port or None,
        login=conn.login or None,
        password=conn.password or None,
        schema=conn.schema or None,
        extra=conn.extra_dejson,
    )


@pytest.mark.parametrize("value", DEFINITIONS)
def test_parse_matches_airflow(value: str) -> None:
    assert parse_connection("x", value) == _airflow_parse(value)


@pytest.mark.parametrize("value", DEFINITIONS)
def test_env_and_airflow_paths_agree(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_EO_SAME", value)
    assert connection_from_env("eo_same") == EoHook.eo_connection("eo_same")


def test_missing_env_connection_names_the_variable() -> None:
    with pytest.raises(ConnectionNotFound, match="AIRFLOW_CONN_EO_NOWHERE is not set"):
        connection_from_env("eo_nowhere", environ={})


def test_invalid_definition_never_echoes_the_value() -> None:
    with pytest.raises(ValueError) as info:
        parse_connection("eo_bad", '{"password": "hunter2", ')
    assert "hunter2" not in str(info.value)
    assert "'eo_bad'" in str(info.value)


def test_password_is_not_in_repr() -> None:
    assert "p@:/" not in repr(parse_connection("x", DEFINITIONS[4]))


def test_postgres_dsn_is_quoted_keyword_form() -> None:
    from psycopg2.extensions import parse_dsn

    dsn = postgres_dsn(parse_connection("x", DEFINITIONS[0]))
    assert dsn == "host=db.example.com port=5433 dbname=ledger user=eo password=p@ss/w:rd sslmode=require"
    tricky = EoConnection("x", host="h", login="u", password="it's a pass", extra={"cursor": "dict"})
    assert parse_dsn(postgres_dsn(tricky)) == {"host": "h", "user": "u", "password": "it's a pass"}


def test_kafka_config_defaults_and_host_fallback() -> None:
    settings = kafka_client_config(EoConnection("k", host="broker", port=9092))
    assert (settings.config, settings.timeout_s) == (
        {"bootstrap.servers": "broker:9092", "reconnect.backoff.ms": "10"},
        15.0,
    )
    extra = {"bootstrap.servers": "b:1", "reconnect.backoff.ms": 250}
    tuned = kafka_client_config(EoConnection("k", extra=extra))
    assert tuned.config == {"bootstrap.servers": "b:1", "reconnect.backoff.ms": "250"}  # the connection wins
    with pytest.raises(ValueError, match=r"'k': set 'bootstrap\.servers'"):
        kafka_client_config(EoConnection("k"))


def test_hbase_kwargs_defaults_and_form_field_keys() -> None:
    assert hbase_connection_kwargs(EoConnection("h")) == {
        "host": "localhost", "port": 9090, "timeout": None, "transport": "buffered", "protocol": "binary",
        "table_prefix": None, "table_prefix_separator": "_", "compat": "0.98",
    }  # fmt: skip
    form = EoConnection(
        "h", host="t", port=1, extra={"extra__eo_hbase__transport": "framed", "timeout_ms": "70"}
    )
    kwargs = hbase_connection_kwargs(form)
    assert (kwargs["transport"], kwargs["timeout"]) == ("framed", 70)


def test_airflow_reads_ui_metadata_of_each_connection_type() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    for hook in (EoKafkaHook, EoHBaseHook, EoLedgerHook):
        assert manager.field_behaviours[hook.conn_type] == hook.get_ui_field_behaviour()
    assert manager.field_behaviours["eo_kafka"]["hidden_fields"] == [
        "host",
        "port",
        "schema",
        "login",
        "password",
    ]
    widgets = manager.connection_form_widgets
    for name in ("transport", "protocol", "table_prefix", "timeout_ms", "servers"):
        assert f"extra__eo_hbase__{name}" in widgets
