"""The "eo" UI plugin: exact JSON, the HTML page, escaping, auth and Airflow discovery.

Real PostgreSQL (fresh ledger database per test) and real topics read through the real
``EoKafkaHook``, FastAPI's TestClient on the app; the last test starts a real
``airflow api-server`` and fetches ``/eo/`` over HTTP.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Epoch, Ledger
from airflow_provider_eo.ledger.models import PartitionRange
from airflow_provider_eo.plugins import epochs as plugin_module
from airflow_provider_eo.plugins.app import create_app
from eo_devtools.stack.ports import find_free_port
from tests.conftest import StackInfo
from tests.integration.ledger_support import TP, fresh_database, make_spec, run_epoch, stack_kafka_hook
from tests.kafka_helpers import RecordSender

pytestmark = pytest.mark.integration

EVIL = "<script>alert(1)</script>"


class TopicShownAs:
    """The real hook serving one real topic under another name (the one stand-in here).

    Kafka accepts only topic names made of ``[a-zA-Z0-9._-]``, so a name carrying markup
    can reach the ledger, and so the page, only through a source that is not a broker.
    Every offset and group commit still goes to the real topic ``real``.
    """

    def __init__(self, hook: EoKafkaHook, real: str, shown: str) -> None:
        self.hook, self.real, self.shown = hook, real, shown

    def _to_real(self, tps: Iterable[TP]) -> list[TP]:
        return [(self.real, p) for t, p in tps if t == self.shown]

    def _to_shown(self, by_tp: Mapping[TP, Any]) -> dict[TP, Any]:
        return {(self.shown, p): v for (_, p), v in by_tp.items()}

    def list_partitions(self, topics: Sequence[str] | None, pattern: str | None) -> list[TP]:
        assert (list(topics or []), pattern) == ([self.shown], None)
        return [(self.shown, p) for _, p in self.hook.list_partitions([self.real], None)]

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        return self._to_shown(self.hook.watermarks(self._to_real(tps)))

    def offsets_for_timestamp(self, tps: Iterable[TP], ts_ms: int) -> dict[TP, int]:
        return self._to_shown(self.hook.offsets_for_timestamp(self._to_real(tps), ts_ms))

    def committed_offsets(self, group_id: str, tps: Iterable[TP]) -> dict[TP, int | None]:
        return self._to_shown(self.hook.committed_offsets(group_id, self._to_real(tps)))

    def commit_offsets(self, group_id: str, offsets: Mapping[TP, int]) -> None:
        self.hook.commit_offsets(group_id, {(self.real, p): o for (_, p), o in offsets.items()})


@dataclass
class Ledgered:
    dsn: str
    topic: str
    committed: Epoch
    aborted: Epoch
    open: Epoch
    backfill: Epoch
    evil: Epoch


def detail(epoch: Epoch) -> dict[str, Any]:
    return json.loads(json.dumps(epoch.to_detail()))


def conn_json(dsn: str) -> str:
    """``AIRFLOW_CONN_*`` JSON form of a libpq DSN."""
    p = parse_dsn(dsn)
    return json.dumps(
        {
            "conn_type": "postgres",
            "host": p["host"],
            "port": int(p.get("port", 5432)),
            "login": p.get("user"),
            "password": p.get("password"),
            "schema": p["dbname"],
        }
    )


@pytest.fixture
def ledgered(stack: StackInfo, kafka_topic_factory: Callable[..., str]) -> Iterator[Ledgered]:
    """orders (a real two-partition topic): COMMITTED, ABORTED, open RESERVED stream epochs
    and a WRITTEN backfill; a second pipeline whose topic name is hostile HTML."""
    hook = stack_kafka_hook(stack)
    topic = kafka_topic_factory(partitions=2, prefix="orders")
    evil_topic = kafka_topic_factory(partitions=1, prefix="evil")
    sender = RecordSender(stack.kafka_bootstrap)
    for i in range(5):
        sender.send(topic, f"k{i}", "{}", partition=0)
    sender.send(evil_topic, "k", "{}", partition=0)
    sender.flush()
    with fresh_database(stack.ledger_dsn) as dsn, Ledger(dsn) as ledger:
        spec = make_spec("orders", topics=[topic])
        committed = run_epoch(ledger, spec, hook, "r1", dag_id="eo_stream__orders")
        for i in range(3):
            sender.send(topic, f"k{i}", "{}", partition=1)
        sender.flush()
        doomed = ledger.reserve_stream_epoch(spec, hook, dag_id="eo_stream__orders", run_id="r2")
        assert committed is not None and doomed is not None
        aborted = ledger.abort(doomed.epoch_id, "worker lost")
        opened = ledger.reserve_stream_epoch(spec, hook, dag_id="eo_stream__orders", run_id="r3")
        assert opened is not None
        back = ledger.reserve_backfill_epoch(
            spec, [PartitionRange(topic, 0, 1, 3)], dag_id="eo_backfill__orders", run_id="b1"
        )
        backfill = ledger.vote_written(back.epoch_id, back.fencing_token, {"records": 2, "cells": 4})
        evil_spec = make_spec("evil", topics=[EVIL])
        evil_source = TopicShownAs(hook, evil_topic, EVIL)
        evil = run_epoch(ledger, evil_spec, evil_source, "r<b>1</b>", dag_id="eo_stream__evil")
        assert evil is not None
        yield Ledgered(dsn, topic, committed, aborted, opened, backfill, evil)


@pytest.fixture
def client(ledgered: Ledgered) -> TestClient:
    return TestClient(create_app(lambda: Ledger(ledgered.dsn)))


def test_pipelines_json(client: TestClient, ledgered: Ledgered) -> None:
    response = client.get("/api/pipelines")
    assert response.status_code == 200
    assert response.json() == [
        {
            "name": "evil",
            "epochs": {"RESERVED": 0, "WRITTEN": 0, "COMMITTED": 1, "ABORTED": 0},
            "open_epochs": [],
            "cursors": [{"topic": EVIL, "partition": 0, "cursor": 1}],
            "dead_letters": 0,
            "gaps": [],
        },
        {
            "name": "orders",
            "epochs": {"RESERVED": 1, "WRITTEN": 1, "COMMITTED": 1, "ABORTED": 1},
            "open_epochs": [
                {"epoch_id": ledgered.open.epoch_id, "kind": "stream", "state": "RESERVED", "run_id": "r3"},
                {
                    "epoch_id": ledgered.backfill.epoch_id,
                    "kind": "backfill",
                    "state": "WRITTEN",
                    "run_id": "b1",
                },
            ],
            "cursors": [
                {"topic": ledgered.topic, "partition": 0, "cursor": 5},
                {"topic": ledgered.topic, "partition": 1, "cursor": 0},
            ],
            "dead_letters": 0,
            "gaps": [],
        },
    ]


def test_epochs_json_filters_and_by_id(client: TestClient, ledgered: Ledgered) -> None:
    orders = [ledgered.committed, ledgered.aborted, ledgered.open, ledgered.backfill]
    assert client.get("/api/epochs").json() == [detail(e) for e in [*orders, ledgered.evil]]
    assert client.get("/api/epochs", params={"pipeline": "orders"}).json() == [detail(e) for e in orders]
    assert client.get("/api/epochs", params={"pipeline": "orders", "limit": 2}).json() == [
        detail(ledgered.open),
        detail(ledgered.backfill),
    ]
    assert client.get("/api/epochs", params={"state": "ABORTED"}).json() == [detail(ledgered.aborted)]
    assert client.get("/api/epochs", params={"kind": "backfill"}).json() == [detail(ledgered.backfill)]
    first = client.get(f"/api/epochs/{ledgered.committed.epoch_id}").json()
    assert first == detail(ledgered.committed)
    assert first["ranges"] == [
        {"topic": ledgered.topic, "partition": 0, "start": 0, "end": 5, "records": 5},
        {"topic": ledgered.topic, "partition": 1, "start": 0, "end": 0, "records": 0},
    ]
    assert detail(ledgered.aborted)["error"] == "worker lost"


def test_errors_are_json(client: TestClient) -> None:
    missing = client.get("/api/epochs/999999")
    assert (missing.status_code, missing.json()) == (
        404,
        {"error": "epoch 999999 does not exist", "type": "EpochNotFound"},
    )
    bad = client.get("/api/epochs", params={"state": "DONE"})
    assert bad.status_code == 422 and bad.json()["type"] == "InvalidRequest"
    assert "state" in bad.json()["error"]
    assert client.get("/api/epochs", params={"limit": 0}).status_code == 422


def test_unreachable_ledger_is_503() -> None:
    down = TestClient(create_app(lambda: Ledger("host=127.0.0.1 port=1 dbname=x connect_timeout=2")))
    response = down.get("/api/pipelines")
    assert response.status_code == 503 and response.json()["type"] == "LedgerUnavailable"
    page = down.get("/")
    assert page.status_code == 503 and "epoch ledger unavailable" in page.text


def rows(html: str, kind: str) -> list[str]:
    return re.findall(rf'<tr class="{kind}"[^>]*>(.*?)</tr>', html)


def test_html_page_rows_and_escaping(client: TestClient, ledgered: Ledgered) -> None:
    html = client.get("/").text
    ids = [int(m) for m in re.findall(r'<tr class="epoch" id="epoch-(\d+)"', html)]
    every = [ledgered.committed, ledgered.aborted, ledgered.open, ledgered.backfill, ledgered.evil]
    assert ids == [e.epoch_id for e in reversed(every)]  # newest first
    assert ledgered.backfill.written_at is not None
    written = ledgered.backfill.written_at.isoformat()
    (row,) = [r for r in rows(html, "epoch") if f"<td>{ledgered.backfill.epoch_id}</td>" in r]
    assert row == (
        f"<td>{ledgered.backfill.epoch_id}</td><td>orders</td><td>backfill</td>"
        '<td><span class="s s-WRITTEN">WRITTEN</span></td>'
        "<td><code>eo_backfill__orders</code><br><code>b1</code></td>"
        f'<td><span class="nw"><code>{ledgered.topic}[0] [1, 3)</code> '
        '<span class="muted">2</span></span></td><td>2</td>'
        "<td><code>{&quot;cells&quot;: 4, &quot;records&quot;: 2}</code></td>"
        f'<td class="muted nw" title="{written}">{written[:19].replace("T", " ")}</td><td class="err"></td>'
    )
    assert "<script>" not in html and "<b>1</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;[0] = 1" in html
    assert "<code>r&lt;b&gt;1&lt;/b&gt;</code>" in html
    assert '<td class="err">worker lost</td>' in html


def test_html_filter_and_dag_preselection(client: TestClient, ledgered: Ledgered) -> None:
    by_dag = client.get("/", params={"dag_id": "eo_backfill__orders"}).text
    assert '<option value="orders" selected>orders</option>' in by_dag
    assert len(rows(by_dag, "pipeline")) == 1 and len(rows(by_dag, "epoch")) == 4
    evil = client.get("/", params={"pipeline": "evil", "dag_id": "eo_stream__orders"}).text
    assert [r for r in rows(evil, "epoch")] == [r for r in rows(evil, "epoch") if ">evil<" in r]
    assert len(rows(evil, "epoch")) == 1
    committed = client.get("/", params={"state": "COMMITTED", "kind": "stream", "limit": 1}).text
    assert len(rows(committed, "epoch")) == 1 and f"epoch-{ledgered.evil.epoch_id}" in committed
    other = client.get("/", params={"dag_id": "some_other_dag", "state": "", "kind": ""}).text
    assert len(rows(other, "pipeline")) == 2


def test_plugin_app_reads_the_connection_and_requires_a_user(
    ledgered: Ledgered, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_EO_LEDGER", conn_json(ledgered.dsn))
    client = TestClient(plugin_module.app)
    denied = client.get("/api/pipelines")
    assert (denied.status_code, denied.json()) == (401, {"detail": "Not authenticated"})
    assert client.get("/").status_code == 401
    plugin_module.app.dependency_overrides[plugin_module.require_airflow_user] = lambda: None
    try:
        names = [p["name"] for p in client.get("/api/pipelines").json()]
    finally:
        plugin_module.app.dependency_overrides.clear()
    assert names == ["evil", "orders"]


def test_airflow_discovers_the_plugin() -> None:
    from airflow import plugins_manager

    plugins, errors = plugins_manager._get_plugins()
    (plugin,) = [p for p in plugins if p.name == "eo"]
    assert isinstance(plugin, plugin_module.EpochLedgerPlugin)
    # Run from the repo root, the in-tree egg-info is a second copy of the distribution: its
    # entry point is skipped as "already registered". Anything else about "eo" is a failure.
    assert not [e for e in errors.values() if "'eo'" in e and "already registered" not in e]
    apps, _ = plugins_manager.get_fastapi_plugins()
    assert {"app": plugin_module.app, "url_prefix": "/eo", "name": "Epoch ledger"} in apps
    views, _ = plugins_manager._get_ui_plugins()
    assert plugin_module.NAV_VIEW in views and plugin_module.DAG_VIEW in views
    assert plugin_module.DAG_VIEW["href"] == "eo/?dag_id={DAG_ID}"


def _get(url: str, token: str | None = None, data: bytes | None = None) -> tuple[int, str]:
    """GET (POST JSON when ``data``) -> (status, body); HTTP errors are answers too."""
    headers = {"Content-Type": "application/json"} if data else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.airflow
def test_real_api_server_serves_the_page(ledgered: Ledgered) -> None:
    home = Path(tempfile.mkdtemp(prefix="eo-ui-home-"))
    port = find_free_port()
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({"admin": "eo-ui-test"}))
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager."
        "SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW_CONN_EO_LEDGER": conn_json(ledgered.dsn),
    }
    airflow = [sys.executable, "-m", "airflow"]
    subprocess.run([*airflow, "db", "migrate"], env=env, cwd=home, check=True, capture_output=True)
    log = (home / "api-server.log").open("w")
    server = subprocess.Popen(
        [*airflow, "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        env=env,
        cwd=home,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if _get(f"{base}/api/v2/monitor/health")[0] == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, (
                home / "api-server.log"
            ).read_text()
            time.sleep(1)
        login = json.dumps({"username": "admin", "password": "eo-ui-test"}).encode()
        token = json.loads(_get(f"{base}/auth/token", data=login)[1])["access_token"]
        assert _get(f"{base}/eo/api/pipelines")[0] == 401
        assert _get(f"{base}/eo/")[0] == 401
        status, html = _get(f"{base}/eo/?dag_id=eo_stream__orders", token)
        assert status == 200, html
        assert f'id="epoch-{ledgered.open.epoch_id}"' in html and "<script>" not in html
        status, body = _get(f"{base}/eo/api/epochs/{ledgered.committed.epoch_id}", token)
        assert (status, json.loads(body)) == (200, detail(ledgered.committed))
        plugins = json.loads(_get(f"{base}/api/v2/plugins", token)[1])["plugins"]
        (eo,) = [p for p in plugins if p["name"] == "eo"]
        assert [v["name"] for v in eo["external_views"]] == ["Epochs", "Epochs"]
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server and its workers: their own session
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)
