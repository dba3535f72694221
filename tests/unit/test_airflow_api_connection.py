"""The stack's ``airflow_api`` connection (``eo-stack env``) as ``AirflowApi`` reads it."""

from __future__ import annotations

import pytest

from airflow_provider_eo.hooks.airflow_api import AirflowApi
from airflow_provider_eo.hooks.connections import connection_from_env
from eo_devtools.stack.connections import airflow_api_connection


def test_the_uri_carries_the_login_quoted_and_names_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    uri = airflow_api_connection("http://127.0.0.1:8793", "admin", "p@ss:w/rd%")
    assert uri == "http://admin:p%40ss%3Aw%2Frd%25@127.0.0.1:8793"
    monkeypatch.setenv("AIRFLOW_CONN_AIRFLOW_API", uri)
    conn = connection_from_env("airflow_api")
    assert (conn.host, conn.port, conn.login, conn.password) == ("127.0.0.1", 8793, "admin", "p@ss:w/rd%")
    assert AirflowApi().url == "http://127.0.0.1:8793"
