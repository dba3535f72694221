"""The "eo" UI plugin: per-DAG access control, lag per partition, the OpenAPI schema.

In-process (FastAPI's TestClient) on a real ledger and real topics. Access decisions come
from a real auth manager (``tests/dag_denying_auth_manager.py``: SimpleAuthManager plus
per-user DAG denials); only the user comes from a request header here, where the API
server would decode the caller's JWT (``test_epochs_plugin.py`` runs that for real).
The last test reads lag through the session's devstack Airflow (``airflow_server``): what
a newcomer opening the Epochs page sees.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from html import escape
from typing import Any

import pytest
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from confluent_kafka.admin import AdminClient
from fastapi import Request
from fastapi.testclient import TestClient

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.plugins.access import PipelineAccess, StreamDagReaders
from airflow_provider_eo.plugins.app import create_app
from airflow_provider_eo.plugins.partition_lag import LAG_OFF
from eo_devtools.stack.ports import find_free_port
from tests.airflow_server import AirflowServer
from tests.conftest import StackInfo
from tests.dag_denying_auth_manager import DagDenyingAuthManager
from tests.integration.epochs_ui_support import (
    EVIL,
    Ledgered,
    detail,
    http,
    ledgered_data,
    partitions_shown,
    rows,
)
from tests.integration.ledger_support import TP, make_spec, run_epoch, stack_kafka_hook
from tests.kafka_helpers import RecordSender

pytestmark = pytest.mark.integration


@pytest.fixture
def ledgered(stack: StackInfo, kafka_topic_factory: Callable[..., str]) -> Iterator[Ledgered]:
    with ledgered_data(stack, kafka_topic_factory) as data:
        yield data


class CountedWatermarks:
    """The real source, recording each Kafka call: ``("list", pattern)`` / ``("watermarks", tps)``."""

    def __init__(self, ledgered: Ledgered) -> None:
        self.source = ledgered.source
        self.calls: list[tuple[str, Any]] = []

    def list_partitions(self, topics: Sequence[str] | None, pattern: str | None) -> list[TP]:
        self.calls.append(("list", pattern))
        return self.source.list_partitions(topics, pattern)

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        wanted = list(tps)
        self.calls.append(("watermarks", wanted))
        return self.source.watermarks(wanted)


def lags(pipeline: dict[str, Any]) -> list[tuple[int, int, int | None, int | None]]:
    return [(c["partition"], c["cursor"], c["high_watermark"], c["lag"]) for c in pipeline["cursors"]]


def test_lag_per_partition_follows_the_topic_in_one_watermarks_call(
    ledgered: Ledgered, stack: StackInfo
) -> None:
    counted = CountedWatermarks(ledgered)
    client = TestClient(create_app(lambda: Ledger(ledgered.dsn), watermarks=lambda: counted))
    for i in range(4):
        ledgered.sender.send(ledgered.topic, f"n{i}", "{}", partition=0)
    for i in range(2):
        ledgered.sender.send(ledgered.topic, f"m{i}", "{}", partition=1)
    ledgered.sender.flush()
    evil, orders = client.get("/api/pipelines").json()
    assert (lags(evil), evil["total_lag"], evil["lag_error"]) == ([(0, 1, 1, 0)], 0, None)
    assert (lags(orders), orders["total_lag"], orders["lag_error"]) == ([(0, 5, 9, 4), (1, 0, 5, 5)], 9, None)
    both = f"(?:{re.escape(EVIL)}|{re.escape(ledgered.topic)})"
    assert counted.calls == [
        ("list", both),
        ("watermarks", [(EVIL, 0), (ledgered.topic, 0), (ledgered.topic, 1)]),
    ]
    counted.calls.clear()
    html = client.get("/", params={"pipeline": "orders"}).text
    assert partitions_shown(html) == [(ledgered.topic, 0, "4"), (ledgered.topic, 1, "5")]
    assert '<td class="lag total-lag">9</td>' in html
    assert counted.calls == [  # only the shown pipeline's partitions
        ("list", f"(?:{re.escape(ledgered.topic)})"),
        ("watermarks", [(ledgered.topic, 0), (ledgered.topic, 1)]),
    ]
    # evil's topic is deleted: only its lag becomes unknown, with the reason
    delete_topic(stack, ledgered.source.real)
    evil, orders = client.get("/api/pipelines").json()
    gone = f"not found in Kafka: {EVIL}[0]"
    assert (lags(evil), evil["total_lag"], evil["lag_error"]) == ([(0, 1, None, None)], None, gone)
    assert (lags(orders), orders["total_lag"], orders["lag_error"]) == ([(0, 5, 9, 4), (1, 0, 5, 5)], 9, None)
    html = client.get("/").text
    assert partitions_shown(html)[0] == ("&lt;script&gt;alert(1)&lt;/script&gt;", 0, "unknown")
    assert f'<span class="err lag-error">not found in Kafka: {escape(EVIL)}[0]</span>' in html
    assert 'id="lag-error"' not in html  # no banner: Kafka answered


def delete_topic(stack: StackInfo, topic: str) -> None:
    """Delete ``topic`` and wait (bounded) until the cluster metadata no longer lists it."""
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.delete_topics([topic])[topic].result(timeout=15)
    deadline = time.monotonic() + 30
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"topic {topic} still listed"
        time.sleep(0.2)


def test_kafka_unreachable_or_lag_off_still_answers(
    ledgered: Ledgered, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = f'{{"conn_type": "kafka", "extra": {{"bootstrap.servers": "127.0.0.1:{find_free_port()}", '
    monkeypatch.setenv("AIRFLOW_CONN_EO_UI_DOWN", closed + '"eo.timeout.ms": 1000}}')
    down = TestClient(
        create_app(lambda: Ledger(ledgered.dsn), watermarks=lambda: EoKafkaHook(kafka_conn_id="eo_ui_down"))
    )
    response = down.get("/api/pipelines")
    assert response.status_code == 200
    for pipeline in response.json():
        assert {(c["high_watermark"], c["lag"]) for c in pipeline["cursors"]} == {(None, None)}
        assert pipeline["total_lag"] is None
        assert pipeline["lag_error"].startswith(
            "Kafka high watermarks unavailable: EoKafkaError: "
            "Kafka connection 'eo_ui_down': cannot list topics: "
        )
    page = down.get("/")
    assert page.status_code == 200
    assert (
        '<div class="banner err" id="lag-error">Lag unknown: Kafka high watermarks unavailable: ' in page.text
    )
    assert [lag for _, _, lag in partitions_shown(page.text)] == ["unknown"] * 3
    assert len(rows(page.text, "epoch")) == 5  # the ledger part is untouched
    missing = TestClient(
        create_app(
            lambda: Ledger(ledgered.dsn), watermarks=lambda: EoKafkaHook(kafka_conn_id="eo_no_such_conn")
        )
    )
    (evil, _) = missing.get("/api/pipelines").json()
    assert evil["lag_error"].startswith("Kafka high watermarks unavailable: AirflowNotFoundException")
    off = TestClient(create_app(lambda: Ledger(ledgered.dsn), watermarks=lambda: None))
    assert [p["lag_error"] for p in off.get("/api/pipelines").json()] == [LAG_OFF, LAG_OFF]


@pytest.fixture
def per_user(ledgered: Ledgered, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], TestClient]:
    """``client(user)``: the app as ``user`` sees it (role viewer; "nobody" has no role)."""
    monkeypatch.setenv(
        "AIRFLOW__EO_TEST__DENIED_DAGS",
        "alice:eo_stream__evil, bob:eo_stream__orders, carol:eo_backfill__orders",
    )
    manager = DagDenyingAuthManager()

    async def as_header_user(request: Request) -> PipelineAccess:
        name = request.headers["x-user"]
        user = SimpleAuthManagerUser(username=name, role=None if name == "nobody" else "viewer")
        return StreamDagReaders(manager, user)

    app = create_app(lambda: Ledger(ledgered.dsn), access=as_header_user, watermarks=lambda: ledgered.source)
    return lambda user: TestClient(app, headers={"x-user": user})


def test_each_user_sees_only_pipelines_whose_stream_dag_they_may_read(
    ledgered: Ledgered, per_user: Callable[[str], TestClient]
) -> None:
    orders = [ledgered.committed, ledgered.aborted, ledgered.open, ledgered.backfill]
    alice, bob, carol, nobody = (per_user(u) for u in ("alice", "bob", "carol", "nobody"))
    # alice may not read eo_stream__evil: evil does not exist for her
    assert [p["name"] for p in alice.get("/api/pipelines").json()] == ["orders"]
    assert alice.get("/api/epochs").json() == [detail(e) for e in orders]
    assert alice.get("/api/epochs", params={"limit": 1}).json() == [detail(ledgered.backfill)]
    assert alice.get("/api/epochs", params={"pipeline": "evil"}).json() == []
    hidden = alice.get(f"/api/epochs/{ledgered.evil.epoch_id}")
    unknown = alice.get("/api/epochs/999999")
    assert (hidden.status_code, hidden.json()) == (
        404,
        {"error": f"epoch {ledgered.evil.epoch_id} does not exist", "type": "EpochNotFound"},
    )
    assert unknown.status_code == 404 and unknown.json()["type"] == hidden.json()["type"]
    page = alice.get("/").text
    (only,) = rows(page, "pipeline")
    assert only.startswith('<td><a href="?pipeline=orders">orders</a></td>')
    assert len(rows(page, "epoch")) == 4 and EVIL not in page and "&lt;script&gt;" not in page
    assert '<option value="evil"' not in page
    evil_page = alice.get("/", params={"pipeline": "evil"}).text
    assert rows(evil_page, "pipeline") == [] and rows(evil_page, "epoch") == []
    assert 'id="charts"' not in evil_page and 'id="charts"' in alice.get("/?pipeline=orders").text
    # the charts and the epoch pages of a hidden pipeline answer exactly as unknown ones
    hidden_charts, unknown_charts = (
        alice.get("/api/pipelines/evil/charts"),
        alice.get("/api/pipelines/x/charts"),
    )
    assert (hidden_charts.status_code, hidden_charts.json()) == (
        404, {"error": "pipeline 'evil' does not exist", "type": "PipelineNotFound"},
    )  # fmt: skip
    assert unknown_charts.json() == {"error": "pipeline 'x' does not exist", "type": "PipelineNotFound"}
    assert alice.get("/api/pipelines/orders/charts").status_code == 200
    hidden_page = alice.get(f"/epochs/{ledgered.evil.epoch_id}")
    unknown_page = alice.get("/epochs/999999")
    assert (hidden_page.status_code, unknown_page.status_code) == (404, 404)
    assert hidden_page.text == unknown_page.text.replace("999999", str(ledgered.evil.epoch_id))
    assert alice.get(f"/epochs/{ledgered.committed.epoch_id}").status_code == 200
    # bob may not read eo_stream__orders: reading eo_backfill__orders is not enough
    assert [p["name"] for p in bob.get("/api/pipelines").json()] == ["evil"]
    assert bob.get("/api/epochs").json() == [detail(ledgered.evil)]
    assert bob.get(f"/api/epochs/{ledgered.backfill.epoch_id}").status_code == 404
    assert bob.get(f"/epochs/{ledgered.backfill.epoch_id}").status_code == 404
    assert bob.get("/api/pipelines/orders/charts").status_code == 404
    by_backfill_dag = bob.get("/", params={"dag_id": "eo_backfill__orders"}).text
    assert rows(by_backfill_dag, "epoch") == [] and rows(by_backfill_dag, "pipeline") == []
    # carol is denied only eo_backfill__orders: she sees both pipelines
    assert [p["name"] for p in carol.get("/api/pipelines").json()] == ["evil", "orders"]
    assert len(carol.get("/api/epochs").json()) == 5
    # a user without a role may read no DAG: nothing at all
    assert nobody.get("/api/pipelines").json() == [] and nobody.get("/api/epochs").json() == []
    assert rows(nobody.get("/").text, "epoch") == []


def test_openapi_schema_describes_every_answer(ledgered: Ledgered) -> None:
    schema = TestClient(create_app(lambda: Ledger(ledgered.dsn))).get("/api/openapi.json").json()
    models = schema["components"]["schemas"]
    assert list(models["Pipeline"]["properties"]) == [
        "name",
        "epochs",
        "open_epochs",
        "cursors",
        "dead_letters",
        "gaps",
        "total_lag",
        "lag_error",
    ]
    assert list(models["PartitionLag"]["properties"]) == [
        "topic",
        "partition",
        "cursor",
        "high_watermark",
        "lag",
    ]
    assert models["PartitionLag"]["required"] == ["topic", "partition", "cursor", "high_watermark", "lag"]
    assert list(models["EpochCounts"]["properties"]) == ["RESERVED", "WRITTEN", "COMMITTED", "ABORTED"]
    assert list(models["Epoch"]["properties"]) == [*detail(ledgered.committed)]
    assert models["Epoch"]["properties"]["committed_at"]["anyOf"][0] == {
        "type": "string",
        "format": "date-time",
    }
    assert list(models["PartitionRange"]["properties"]) == ["topic", "partition", "start", "end", "records"]
    assert list(models["ErrorBody"]["properties"]) == ["error", "type"]
    assert "HTTPValidationError" not in models

    def answer(path: str, status: str) -> Any:
        return schema["paths"][path]["get"]["responses"][status]["content"]["application/json"]["schema"]

    ref = "#/components/schemas/"
    assert answer("/api/pipelines", "200")["items"] == {"$ref": ref + "Pipeline"}
    assert answer("/api/epochs", "200")["items"] == {"$ref": ref + "Epoch"}
    assert answer("/api/epochs/{epoch_id}", "200") == {"$ref": ref + "EpochDetail"}
    assert list(models["EpochDetail"]["properties"]) == [
        *detail(ledgered.committed),
        "spec_digest",
        "history",
    ]
    assert list(models["Transition"]["properties"]) == ["from", "to", "at", "actor_kind", "actor", "reason"]
    for path, status in [
        ("/api/epochs/{epoch_id}", "404"),
        ("/api/epochs", "422"),
        ("/api/pipelines", "503"),
    ]:
        assert answer(path, status) == {"$ref": ref + "ErrorBody"}
    assert answer("/api/pipelines", "401") == {"$ref": ref + "AuthErrorBody"}


@pytest.mark.airflow
def test_devstack_epochs_page_shows_lag(
    airflow_server: AirflowServer, stack: StackInfo, kafka_topic_factory: Callable[..., str]
) -> None:
    """The devstack's api-server (default settings: ``eo_ledger``, ``eo_kafka``) serves a
    pipeline's exact lag per partition, in the JSON API and on the page."""
    name = f"ui_lag_{uuid.uuid4().hex[:8]}"
    topic = kafka_topic_factory(partitions=2, prefix="uilag")
    sender = RecordSender(stack.kafka_bootstrap)
    for partition, count in ((0, 3), (1, 2)):
        for i in range(count):
            sender.send(topic, f"k{i}", "{}", partition=partition)
    sender.flush()
    with Ledger(stack.ledger_dsn) as ledger:
        spec = make_spec(name, topics=[topic])
        assert run_epoch(ledger, spec, stack_kafka_hook(stack), "r1", dag_id=f"eo_stream__{name}") is not None
    for i in range(4):
        sender.send(topic, f"n{i}", "{}", partition=1)
    sender.flush()
    (pipeline,) = [p for p in airflow_server.api("GET", "/eo/api/pipelines") if p["name"] == name]
    assert (lags(pipeline), pipeline["total_lag"], pipeline["lag_error"]) == (
        [(0, 3, 3, 0), (1, 2, 6, 4)],
        4,
        None,
    ), pipeline["lag_error"]
    status, html = http(f"{airflow_server.url}/eo/?pipeline={name}", airflow_server.client.token())
    assert status == 200 and partitions_shown(html) == [(topic, 0, "0"), (topic, 1, "4")]
