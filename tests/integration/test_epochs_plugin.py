"""The "eo" UI plugin: exact JSON, the HTML page, escaping, auth and Airflow discovery.

Real PostgreSQL (fresh ledger database per module: the tests only read) and real topics read through the real
``EoKafkaHook``, FastAPI's TestClient on the app; the last test starts a real
``airflow api-server`` whose auth manager denies single DAGs to single users, and checks
over HTTP what each user sees. Access control, lag and the OpenAPI schema in-process:
``test_epochs_access_lag.py``.
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.plugins import epochs as plugin_module
from airflow_provider_eo.plugins.app import create_app
from eo_devtools.stack.ports import find_free_port
from tests.conftest import StackInfo
from tests.integration.epochs_ui_support import (
    EVIL,
    Ledgered,
    conn_json,
    detail,
    http,
    ledgered_data,
    partitions_shown,
    raw_history,
    rows,
)

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ledgered(stack: StackInfo, module_topic_factory: Callable[..., str]) -> Iterator[Ledgered]:
    """One per module: its tests only read the ledger and the topics."""
    with ledgered_data(stack, module_topic_factory) as data:
        yield data


@pytest.fixture
def client(ledgered: Ledgered) -> TestClient:
    return TestClient(create_app(lambda: Ledger(ledgered.dsn), watermarks=lambda: ledgered.source))


def test_pipelines_json(client: TestClient, ledgered: Ledgered) -> None:
    response = client.get("/api/pipelines")
    assert response.status_code == 200
    assert response.json() == [
        {
            "name": "evil",
            "epochs": {"RESERVED": 0, "WRITTEN": 0, "COMMITTED": 1, "ABORTED": 0},
            "open_epochs": [],
            "cursors": [{"topic": EVIL, "partition": 0, "cursor": 1, "high_watermark": 1, "lag": 0}],
            "dead_letters": 0,
            "gaps": [],
            "total_lag": 0,
            "lag_error": None,
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
                {"topic": ledgered.topic, "partition": 0, "cursor": 5, "high_watermark": 5, "lag": 0},
                {"topic": ledgered.topic, "partition": 1, "cursor": 0, "high_watermark": 3, "lag": 3},
            ],
            "dead_letters": 0,
            "gaps": [],
            "total_lag": 3,
            "lag_error": None,
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
    committed = ledgered.committed
    history = raw_history(ledgered.dsn, first["epoch_id"])
    assert first == {**detail(committed), "spec_digest": committed.spec_digest, "history": history}
    assert first["ranges"] == [
        {"topic": ledgered.topic, "partition": 0, "start": 0, "end": 5, "records": 5},
        {"topic": ledgered.topic, "partition": 1, "start": 0, "end": 0, "records": 0},
    ]
    assert detail(ledgered.aborted)["error"] == "worker lost"


def test_an_epochs_history_in_the_api_and_the_page(client: TestClient, ledgered: Ledgered) -> None:
    me = Actor.process().name  # the fixture's ledger acted as this process
    committed = client.get(f"/api/epochs/{ledgered.committed.epoch_id}").json()["history"]
    assert [(h["from"], h["to"], h["actor_kind"], h["actor"], h["reason"]) for h in committed] == [
        (None, "RESERVED", "process", me, "reserved"),
        ("RESERVED", "WRITTEN", "process", me, "voted WRITTEN by its writer"),
        ("WRITTEN", "COMMITTED", "process", me, "committed"),
    ]
    aborted = client.get(f"/api/epochs/{ledgered.aborted.epoch_id}").json()["history"]
    assert [(h["from"], h["to"], h["reason"]) for h in aborted] == [
        (None, "RESERVED", "reserved"),
        ("RESERVED", "ABORTED", "worker lost"),
    ]
    html = client.get("/", params={"pipeline": "orders"}).text
    histories = re.findall(r'<tr class="history" id="history-(\d+)">(.*?)</tr>', html)
    every = [ledgered.committed, ledgered.aborted, ledgered.open, ledgered.backfill]
    assert [int(epoch_id) for epoch_id, _ in histories] == [e.epoch_id for e in reversed(every)]
    shown = dict((int(epoch_id), row) for epoch_id, row in histories)
    moves = re.findall(r'data-from="(\w*)" data-to="(\w+)"', shown[ledgered.aborted.epoch_id])
    assert moves == [("", "RESERVED"), ("RESERVED", "ABORTED")]
    assert "<summary>History (2)</summary>" in shown[ledgered.aborted.epoch_id]
    assert '<span class="reason">worker lost</span>' in shown[ledgered.aborted.epoch_id]
    assert f"process <code>{me}</code>" in shown[ledgered.committed.epoch_id]


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


def test_html_page_rows_and_escaping(client: TestClient, ledgered: Ledgered) -> None:
    html = client.get("/").text
    ids = [int(m) for m in re.findall(r'<tr class="epoch" id="epoch-(\d+)"', html)]
    every = [ledgered.committed, ledgered.aborted, ledgered.open, ledgered.backfill, ledgered.evil]
    assert ids == [e.epoch_id for e in reversed(every)]  # newest first
    assert ledgered.backfill.written_at is not None
    written = ledgered.backfill.written_at.isoformat()
    epoch_id = ledgered.backfill.epoch_id
    (row,) = [r for r in rows(html, "epoch") if f'href="epochs/{epoch_id}">{epoch_id}</a>' in r]
    run_link = '<a class="run-link" href="../dags/eo_backfill__orders/runs/b1" target="_top">'
    last_change = f'<td class="muted nw" title="{written}">{written[:19].replace("T", " ")}</td>'
    assert row == (
        f'<td><a class="epoch-link" href="epochs/{epoch_id}">{epoch_id}</a></td>'
        "<td>orders</td><td>backfill</td>"
        '<td><span class="s s-WRITTEN">WRITTEN</span></td>'
        f"<td><code>eo_backfill__orders</code><br>{run_link}<code>b1</code></a></td>"
        f'<td><span class="nw"><code>{ledgered.topic}[0] [1, 3)</code> '
        '<span class="muted">2</span></span></td><td>2</td>'
        '<td><span class="metrics">records 2</span></td>'  # the vote's figures the page names
        f'{last_change}<td class="err"></td>'
        '<td class="audit-cell"><span class="muted">-</span></td>'  # never audited
    )
    # the page's one script is its own (html_parts.TOP_LINKS); the hostile names are escaped
    assert html.count("<script>") == 1 and "<b>1</b>" not in html
    assert "<code>&lt;script&gt;alert(1)&lt;/script&gt;[0] = 1</code>" in html
    assert partitions_shown(html) == [
        ("&lt;script&gt;alert(1)&lt;/script&gt;", 0, "0"),
        (ledgered.topic, 0, "0"),
        (ledgered.topic, 1, "3"),
    ]
    assert 'id="lag-error"' not in html
    evil_run = "../dags/eo_stream__evil/runs/r%3Cb%3E1%3C%2Fb%3E"
    assert f'href="{evil_run}" target="_top"><code>r&lt;b&gt;1&lt;/b&gt;</code>' in html
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


def test_plugin_app_requires_a_user_and_reads_its_connections(
    ledgered: Ledgered, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = TestClient(plugin_module.app)
    for path in ("/api/pipelines", "/api/epochs", f"/api/epochs/{ledgered.committed.epoch_id}", "/"):
        denied = client.get(path)
        assert (denied.status_code, denied.json()) == (401, {"detail": "Not authenticated"}), path
    monkeypatch.setenv("AIRFLOW_CONN_EO_LEDGER", conn_json(ledgered.dsn))
    with plugin_module.open_ledger() as ledger:
        assert ledger.list_pipelines() == ["evil", "orders"]
    monkeypatch.setenv("AIRFLOW__EO__UI_KAFKA_CONN_ID", "eo_ui_kafka")
    reader = plugin_module.open_watermarks()
    assert isinstance(reader, EoKafkaHook) and reader.kafka_conn_id == "eo_ui_kafka"
    monkeypatch.setenv("AIRFLOW__EO__UI_KAFKA_CONN_ID", "")
    assert plugin_module.open_watermarks() is None  # lag off


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


def _eo_plugin_as_airflow_lists_it(env: dict[str, str]) -> dict[str, Any]:
    """The "eo" plugin's entry of ``airflow plugins -o json`` run with ``env``."""
    home = tempfile.mkdtemp(prefix="eo-plugins-home-")
    try:
        answer = subprocess.run(
            [sys.executable, "-m", "airflow", "plugins", "-o", "json"],
            env={**os.environ, "AIRFLOW_HOME": home, "AIRFLOW__CORE__LOAD_EXAMPLES": "False", **env},
            cwd=home,
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    (eo,) = [p for p in json.loads(answer.stdout) if p["name"] == "eo"]
    return dict(eo)


def test_ui_enabled_false_leaves_airflow_without_the_page() -> None:
    """``[eo] ui_enabled = false``: Airflow's plugin list has no app and no view of "eo"
    (its timetable stays); by default it has both."""
    hidden = _eo_plugin_as_airflow_lists_it({"AIRFLOW__EO__UI_ENABLED": "false"})
    assert (hidden["fastapi_apps"], hidden["external_views"]) == ([], [])
    assert hidden["timetables"] == ["airflow_provider_eo.dags.backfill_timetable.BackfillOnlyTimetable"]
    shown = _eo_plugin_as_airflow_lists_it({})
    assert [app["url_prefix"] for app in shown["fastapi_apps"]] == ["/eo"]
    assert [view["href"] for view in shown["external_views"]] == ["eo/", "eo/?dag_id={DAG_ID}"]


def _wait_healthy(server: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            if http(f"{base}/api/v2/monitor/health")[0] == 200:
                return
        except OSError:
            pass
        assert server.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(1)


@pytest.mark.airflow
def test_real_api_server_serves_the_page_per_user(ledgered: Ledgered, stack: StackInfo) -> None:
    """A real ``airflow api-server`` with a real auth-manager subclass
    (``tests/dag_denying_auth_manager.py``) that denies alice ``eo_stream__evil`` and bob
    ``eo_stream__orders``: each sees exactly the other pipeline, its epochs and its lag."""
    home = Path(tempfile.mkdtemp(prefix="eo-ui-home-"))
    port = find_free_port()
    passwords = home / "passwords.json"
    users = {"admin": "eo-ui-admin", "alice": "eo-ui-alice", "bob": "eo-ui-bob"}
    passwords.write_text(json.dumps(users))
    kafka = {
        "conn_type": "kafka",
        "extra": {"bootstrap.servers": stack.kafka_bootstrap, "eo.timeout.ms": 5000},
    }
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__AUTH_MANAGER": "tests.dag_denying_auth_manager.DagDenyingAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,alice:viewer,bob:viewer",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__EO_TEST__DENIED_DAGS": "alice:eo_stream__evil,bob:eo_stream__orders",
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        # the page reads the ledger [eo] ui_ledger_conn_id names; the default one would answer 503
        "AIRFLOW_CONN_EO_LEDGER": json.dumps({**json.loads(conn_json(ledgered.dsn)), "schema": "eo_none"}),
        "AIRFLOW__EO__UI_LEDGER_CONN_ID": "eo_ui_ledger",
        "AIRFLOW_CONN_EO_UI_LEDGER": conn_json(ledgered.dsn),
        "AIRFLOW__EO__UI_KAFKA_CONN_ID": "eo_ui_kafka",
        "AIRFLOW_CONN_EO_UI_KAFKA": json.dumps(kafka),
    }
    airflow = [sys.executable, "-m", "airflow"]
    subprocess.run([*airflow, "db", "migrate"], env=env, cwd=home, check=True, capture_output=True)
    log_path = home / "api-server.log"
    log = log_path.open("w")
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
        _wait_healthy(server, base, log_path)

        def token(user: str) -> str:
            login = json.dumps({"username": user, "password": users[user]}).encode()
            return str(json.loads(http(f"{base}/auth/token", data=login)[1])["access_token"])

        def get(path: str, user: str) -> tuple[int, Any]:
            status, body = http(f"{base}/eo{path}", token(user))
            return status, (body if path.startswith("/?") else json.loads(body))

        assert http(f"{base}/eo/api/pipelines")[0] == 401
        assert http(f"{base}/eo/")[0] == 401
        orders = [ledgered.committed, ledgered.aborted, ledgered.open, ledgered.backfill]
        # alice: orders only, with its exact lag (5 - 5 and 3 - 0)
        status, alice = get("/api/pipelines", "alice")
        assert status == 200 and [p["name"] for p in alice] == ["orders"]
        assert [
            (c["partition"], c["cursor"], c["high_watermark"], c["lag"]) for c in alice[0]["cursors"]
        ] == [
            (0, 5, 5, 0),
            (1, 0, 3, 3),
        ]
        assert (alice[0]["total_lag"], alice[0]["lag_error"]) == (3, None)
        assert get("/api/epochs", "alice") == (200, [detail(e) for e in orders])
        assert get("/api/epochs?limit=1", "alice") == (200, [detail(ledgered.backfill)])
        assert get("/api/epochs?pipeline=evil", "alice") == (200, [])
        hidden = get(f"/api/epochs/{ledgered.evil.epoch_id}", "alice")
        assert hidden == (
            404,
            {"error": f"epoch {ledgered.evil.epoch_id} does not exist", "type": "EpochNotFound"},
        )
        status, html = get("/?dag_id=eo_stream__orders", "alice")
        assert status == 200, html
        assert [int(i) for i in re.findall(r'id="epoch-(\d+)"', html)] == [
            e.epoch_id for e in reversed(orders)
        ]
        assert partitions_shown(html) == [(ledgered.topic, 0, "0"), (ledgered.topic, 1, "3")]
        # the page's one script is its own (html_parts.TOP_LINKS); no lag error
        assert html.count("<script>") == 1 and 'id="lag-error"' not in html
        # bob: evil only; its topic name is no Kafka topic, so its lag is unknown
        status, bob = get("/api/pipelines", "bob")
        assert status == 200 and [p["name"] for p in bob] == ["evil"]
        assert [(c["cursor"], c["high_watermark"], c["lag"]) for c in bob[0]["cursors"]] == [(1, None, None)]
        assert (bob[0]["total_lag"], bob[0]["lag_error"]) == (None, f"not found in Kafka: {EVIL}[0]")
        assert get("/api/epochs", "bob") == (200, [detail(ledgered.evil)])
        assert get(f"/api/epochs/{ledgered.committed.epoch_id}", "bob")[0] == 404
        status, html = get("/?dag_id=eo_backfill__orders", "bob")
        assert status == 200 and rows(html, "epoch") == [] and rows(html, "pipeline") == []
        assert '<option value="orders"' not in html and '<option value="evil">evil</option>' in html
        # admin: everything
        evil_history = raw_history(ledgered.dsn, ledgered.evil.epoch_id)
        evil = {**detail(ledgered.evil), "spec_digest": ledgered.evil.spec_digest, "history": evil_history}
        assert get(f"/api/epochs/{ledgered.evil.epoch_id}", "admin") == (200, evil)
        assert get("/api/epochs", "admin") == (200, [detail(e) for e in [*orders, ledgered.evil]])
        schema = json.loads(http(f"{base}/eo/api/openapi.json")[1])
        answer = schema["paths"]["/api/pipelines"]["get"]["responses"]["200"]["content"]["application/json"]
        assert answer["schema"]["items"] == {"$ref": "#/components/schemas/Pipeline"}
        plugins = json.loads(http(f"{base}/api/v2/plugins", token("admin"))[1])["plugins"]
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
