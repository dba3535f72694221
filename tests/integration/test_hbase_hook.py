"""EoHBaseHook against Apache HBase's Thrift1 server (the local stack's) over TCP."""

from __future__ import annotations

import json
import uuid

import pytest

from airflow_provider_eo.hooks.hbase import EoHBaseHook

pytestmark = pytest.mark.integration


@pytest.fixture
def hbase_env(stack, monkeypatch: pytest.MonkeyPatch):
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)
    return stack


def _set_conn(monkeypatch: pytest.MonkeyPatch, conn_id: str, stack, **extra: object) -> None:
    definition = {"conn_type": "eo_hbase", "host": stack.hbase_host, "port": stack.hbase_port, "extra": extra}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(definition))


def test_test_connection(hbase_env) -> None:
    ok, message = EoHBaseHook().test_connection()
    assert ok, message
    assert message.startswith("Connected:")


def test_test_connection_reports_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    definition = {"conn_type": "eo_hbase", "host": "127.0.0.1", "port": 1, "extra": {"timeout_ms": 1000}}
    monkeypatch.setenv("AIRFLOW_CONN_EO_HBASE_DOWN", json.dumps(definition))
    ok, message = EoHBaseHook(hbase_conn_id="eo_hbase_down").test_connection()
    assert not ok
    assert "eo_hbase_down" in message


def test_connection_and_pool_write_and_read(hbase_env) -> None:
    hook = EoHBaseHook()
    table = f"hook_{uuid.uuid4().hex[:8]}"
    conn = hook.get_conn()
    try:
        conn.create_table(table, {"d": {}})
        conn.table(table).put(b"row1", {b"d:a": b"1", b"d:b": b"2"})
    finally:
        conn.close()
    pool = hook.get_pool(size=2)
    with pool.connection() as pooled:
        assert pooled.table(table).row(b"row1") == {b"d:a": b"1", b"d:b": b"2"}
        assert table.encode() in pooled.tables()


def test_table_prefix_from_extra(hbase_env, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"p{uuid.uuid4().hex[:6]}"
    _set_conn(monkeypatch, "eo_hbase_prefixed", hbase_env, table_prefix=prefix, timeout_ms=30000)
    prefixed = EoHBaseHook(hbase_conn_id="eo_hbase_prefixed")
    assert prefixed.connection_kwargs["table_prefix"] == prefix
    conn = prefixed.get_conn()
    try:
        conn.create_table("events", {"d": {}})
        conn.table("events").put(b"r", {b"d:x": b"y"})
        assert conn.tables() == [b"events"]  # happybase strips the prefix of its own tables
    finally:
        conn.close()
    plain = EoHBaseHook().get_conn()
    try:
        assert f"{prefix}_events".encode() in plain.tables()
        assert plain.table(f"{prefix}_events").row(b"r") == {b"d:x": b"y"}
    finally:
        plain.close()


def test_invalid_transport_is_a_clear_error(hbase_env, monkeypatch: pytest.MonkeyPatch) -> None:
    _set_conn(monkeypatch, "eo_hbase_bad", hbase_env, transport="carrier-pigeon")
    with pytest.raises(ValueError, match="'eo_hbase_bad': transport must be buffered, framed or http"):
        EoHBaseHook(hbase_conn_id="eo_hbase_bad").get_conn()
