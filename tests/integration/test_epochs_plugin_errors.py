"""What the "eo" UI plugin answers when something fails: an unreachable ledger is a 503
naming the ledger connection (never its password), a bug is a logged 500, for the JSON
API and the HTML pages alike.

FastAPI's TestClient on the app with the plugin's own ledger factory
(``epochs.open_ledger``: the connection from ``AIRFLOW_CONN_EO_LEDGER``); the ledger is
the stack's real PostgreSQL (a fresh database), or a closed port of this machine. The
bug is one view function patched to raise ``KeyError`` (the one stand-in here).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest
from fastapi.testclient import TestClient
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.plugins import epochs as plugin_module
from airflow_provider_eo.plugins import views
from airflow_provider_eo.plugins.app import create_app
from eo_devtools.stack.ports import find_free_port
from tests.conftest import StackInfo
from tests.integration.epochs_ui_support import conn_json
from tests.integration.ledger_support import fresh_database

pytestmark = pytest.mark.integration
PASSWORD = "s3cret-ledger-pw"


@pytest.fixture
def ledger_dsn(stack: StackInfo) -> Iterator[str]:
    with fresh_database(stack.ledger_dsn) as dsn:
        yield dsn


def _client() -> TestClient:
    """The plugin's app as the API server builds it, without Airflow's login check."""
    return TestClient(create_app(plugin_module.open_ledger, watermarks=lambda: None))


def _closed_ledger(monkeypatch: pytest.MonkeyPatch) -> int:
    """``eo_ledger`` points at a closed port of this machine (with a password); the port."""
    port = find_free_port()
    connection = {
        "conn_type": "postgres",
        "host": "127.0.0.1",
        "port": port,
        "login": "eo",
        "password": PASSWORD,
        "schema": "eo_ui",
        "extra": json.dumps({"connect_timeout": "5"}),
    }
    monkeypatch.setenv("AIRFLOW_CONN_EO_LEDGER", json.dumps(connection))
    monkeypatch.delenv("AIRFLOW__EO__UI_LEDGER_CONN_ID", raising=False)
    return port


def test_an_unreachable_ledger_is_503_naming_its_connection(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    port = _closed_ledger(monkeypatch)
    caplog.set_level(logging.DEBUG)
    client = _client()
    message = (
        f"epoch ledger unavailable at 127.0.0.1:{port}/eo_ui of connection 'eo_ledger' "
        "(nothing was changed): "
        f'connection to server at "127.0.0.1", port {port} failed: Connection refused'
    )
    for path in ("/api/pipelines", "/api/epochs", "/api/epochs/1", "/api/pipelines/p/charts"):
        answer = client.get(path)
        unavailable = {"error": message, "type": "LedgerUnavailable"}
        assert (answer.status_code, answer.json()) == (503, unavailable), path
    page = client.get("/")
    assert page.status_code == 503
    shown = message.replace('"', "&quot;").replace("'", "&#x27;")
    assert f'<div class="banner err">{shown}</div>' in page.text
    epoch_page = client.get("/epochs/1")
    assert epoch_page.status_code == 503
    assert f'<h1>Epoch ledger unavailable</h1><p class="err">{shown}</p>' in epoch_page.text
    warnings = [r.getMessage() for r in caplog.records if r.name == "airflow_provider_eo.plugins.app"]
    assert len(warnings) == 6 and all(w.endswith(message) for w in warnings)
    assert not [r for r in caplog.records if r.exc_info]  # unavailability is no bug: no traceback
    for text in (caplog.text, page.text, epoch_page.text):
        assert PASSWORD not in text


def test_an_undefined_ledger_connection_is_503_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__EO__UI_LEDGER_CONN_ID", "eo_no_such_ledger")
    message = (
        "epoch ledger unavailable at connection 'eo_no_such_ledger' (nothing was changed): "
        "the connection is not defined"
    )
    answer = _client().get("/api/pipelines")
    assert (answer.status_code, answer.json()) == (503, {"error": message, "type": "LedgerUnavailable"})
    page = _client().get("/")
    assert page.status_code == 503 and "connection &#x27;eo_no_such_ledger&#x27;" in page.text


def _raise_key_error(*args: Any, **kwargs: Any) -> NoReturn:
    raise KeyError("cursor")


def _tracebacks(caplog: pytest.LogCaptureFixture) -> list[tuple[str, type[BaseException] | None]]:
    """(message, exception class) of every record logged with a traceback."""
    return [(r.getMessage(), r.exc_info[0]) for r in caplog.records if r.exc_info]


def test_a_bug_is_a_logged_500_in_the_json_api(
    ledger_dsn: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_EO_LEDGER", conn_json(ledger_dsn))
    client = _client()
    assert (client.get("/api/pipelines").status_code, client.get("/api/pipelines").json()) == (200, [])
    caplog.clear()
    monkeypatch.setattr(views, "pipelines", _raise_key_error)
    answer = client.get("/api/pipelines")
    assert (answer.status_code, answer.json()) == (
        500,
        {
            "error": "internal error (KeyError) of the Epochs plugin; its traceback is in the API server's"
            " log",
            "type": "InternalError",
        },
    )
    assert _tracebacks(caplog) == [("Epochs plugin: GET /api/pipelines failed", KeyError)]
    assert [r.name for r in caplog.records if r.exc_info] == ["airflow_provider_eo.plugins.server_errors"]
    assert client.get("/api/epochs").json() == []  # the other routes still answer


def test_a_bug_is_a_logged_500_in_the_html_pages(
    ledger_dsn: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_EO_LEDGER", conn_json(ledger_dsn))
    client = _client()
    assert client.get("/").status_code == 200
    caplog.clear()
    monkeypatch.setattr(views, "page_data", _raise_key_error)
    page = client.get("/")
    assert (page.status_code, page.headers["content-type"]) == (500, "text/html; charset=utf-8")
    message = "internal error (KeyError) of the Epochs plugin; its traceback is in the API server&#x27;s log"
    assert f'<h1>Internal error</h1><p class="err">{message}</p>' in page.text
    assert "unavailable" not in page.text
    monkeypatch.setattr(views, "epoch_page_data", _raise_key_error)
    epoch_page = client.get("/epochs/1")
    assert epoch_page.status_code == 500 and f'<p class="err">{message}</p>' in epoch_page.text
    assert _tracebacks(caplog) == [
        ("Epochs plugin: GET / failed", KeyError),
        ("Epochs plugin: GET /epochs/1 failed", KeyError),
    ]
    assert parse_dsn(ledger_dsn)["password"] not in caplog.text
