"""The stack's ``airflow_api`` connection (``eo-stack env``) as ``AirflowApi`` reads it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

import pytest

from airflow_provider_eo.clients.airflow_rest import AirflowApi
from airflow_provider_eo.clients.connections import connection_from_env
from eo_devtools.stack.connections import airflow_api_connection
from eo_devtools.stack.stack import LocalStack


def test_the_uri_carries_the_login_quoted_and_names_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    uri = airflow_api_connection("http://127.0.0.1:8793", "admin", "p@ss:w/rd%")
    assert uri == "http://admin:p%40ss%3Aw%2Frd%25@127.0.0.1:8793"
    monkeypatch.setenv("AIRFLOW_CONN_AIRFLOW_API", uri)
    conn = connection_from_env("airflow_api")
    assert (conn.host, conn.port, conn.login, conn.password) == ("127.0.0.1", 8793, "admin", "p@ss:w/rd%")
    assert AirflowApi().url == "http://127.0.0.1:8793"


def test_eo_stack_env_names_the_api_only_while_the_api_server_runs(tmp_path: Path) -> None:
    ports = {
        "postgres": 5001,
        "kafka": 5002,
        "hbase-thrift": 5003,
        "schema-registry": 5004,
        "airflow-api": 5005,
    }
    (tmp_path / "stack.json").write_text(json.dumps({"ports": ports}))
    stack = LocalStack(tmp_path)
    assert "AIRFLOW_CONN_AIRFLOW_API" not in stack.conn_env()
    (tmp_path / "pids").mkdir()
    (tmp_path / "pids" / "airflow-api-server.pid").write_text(f"{os.getpid()}\n")  # a live process
    password = stack.airflow().config.secrets()["admin_password"]
    assert stack.conn_env()["AIRFLOW_CONN_AIRFLOW_API"] == (
        f"http://admin:{quote(password, safe='')}@127.0.0.1:5005"
    )
