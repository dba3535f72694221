"""The Epochs page's charts and an epoch's own page, on the real ledger and broker: phase
durations from the ledger's own times, the charts' JSON equal to the rows read directly from
PostgreSQL, every drawn point equal to the JSON, and the epoch page's tables and links.
(Access control on these routes: test_epochs_access_lag.py; in a browser on a real
Airflow: tests/browser/test_ui_walkthrough.py.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg2
import pytest
from fastapi.testclient import TestClient

from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.operators.wait import WaitForRecordsOperator
from airflow_provider_eo.plugins.app import create_app
from tests.chart_rows import expected_points, raw_epochs, raw_samples
from tests.conftest import StackInfo
from tests.integration.operator_support import commit, fill, reserve
from tests.kafka_helpers import produce

pytestmark = pytest.mark.integration

VOTE = {"records": 5, "cells_written": 10, "bad_records": 2, "tasks": 2, "duration_s": 3.0,
        "spark_tasks_s": 1.5, "vote_after_tasks_s": 0.25}  # fmt: skip


@dataclass
class Charted:
    """Pipeline ``name``: epochs ``new`` (voted with the Spark job's times and two records
    dead-lettered, committed by the commit operator), ``old`` (voted and committed as before
    migration 0005: no job times, no commit start) and ``last``; a wait sample between them."""

    dsn: str
    name: str
    topic: str
    new: int
    old: int
    last: int


@pytest.fixture(scope="module")
def charted(
    stack: StackInfo, module_topic_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Charted]:
    topic = module_topic_factory(partitions=2, prefix="charts")
    name = f"charts_{topic.rsplit('-', 1)[-1][:8]}"
    file = tmp_path_factory.mktemp("charts") / "pipelines.yaml"
    file.write_text(f"pipelines:\n  - {{name: {name}, topics: [{topic}], hbase: {{table: {name}}}}}\n")
    with pytest.MonkeyPatch.context() as env, Ledger(stack.ledger_dsn) as ledger:
        for key, value in stack.conn_env.items():
            env.setenv(key, value)
        fill(stack, topic, [3, 2])
        new = reserve(name, str(file), run_id="r-new")
        ledger.vote_written(new["epoch_id"], new["fencing_token"], VOTE)
        commit(name, str(file), new["epoch_id"])
        produce(stack.kafka_bootstrap, topic, [("k", "v")] * 2, partition=1)
        old = reserve(name, str(file), run_id="r-old")
        ledger.vote_written(old["epoch_id"], old["fencing_token"], {"records": 2})
        ledger.mark_committed(old["epoch_id"])  # as before migration 0005: no commit_started_at
        produce(stack.kafka_bootstrap, topic, [("k", "v")] * 3, partition=0)
        wait = WaitForRecordsOperator(task_id="wait", pipeline=name, pipelines_file=str(file))
        assert wait.execute({})["pending"] == 3  # type: ignore[arg-type,index]
        last = reserve(name, str(file), run_id="r-last")
        ledger.vote_written(last["epoch_id"], last["fencing_token"], {**VOTE, "records": 3})
        commit(name, str(file), last["epoch_id"])
        yield Charted(stack.ledger_dsn, name, topic, new["epoch_id"], old["epoch_id"], last["epoch_id"])


@pytest.fixture
def client(charted: Charted) -> TestClient:
    return TestClient(create_app(lambda: Ledger(charted.dsn)))


def test_phases_and_figures_come_from_the_ledgers_own_times(charted: Charted) -> None:
    with Ledger(charted.dsn) as ledger:
        new, old = ledger.epoch_point(charted.new), ledger.epoch_point(charted.old)
    expected = {e["epoch_id"]: e for e in raw_epochs(charted.dsn, charted.name)}
    assert new.times.phases() == expected[charted.new]["phases"]
    assert None not in new.times.phases().values()
    assert new.times.phases()["spark_tasks"] == 1.5  # the vote's spark_tasks_s, placed before written_at
    assert round(sum(new.times.phases().values()), 3) == pytest.approx(new.times.duration_s, abs=0.003)
    assert (new.records, new.dead_letters) == (5, 2)
    # an epoch voted and committed before migration 0005: only its reservation is known
    assert old.times.phases() == expected[charted.old]["phases"]
    assert [k for k, v in old.times.phases().items() if v is not None] == ["reserve"]
    relabel = "UPDATE eo.epoch_transitions SET actor_kind = %s WHERE epoch_id = %s AND from_state IS NULL"

    def created_by(kind: str) -> None:
        with psycopg2.connect(charted.dsn) as conn, conn.cursor() as cur:
            cur.execute(relabel, (kind, charted.old))
        conn.close()

    created_by("migration")  # as if created before the history (migration 0004): nothing is known
    try:
        with Ledger(charted.dsn) as ledger:
            assert set(ledger.epoch_point(charted.old).times.phases().values()) == {None}
    finally:
        created_by("task")


def test_the_charts_json_is_the_ledgers_rows(charted: Charted, client: TestClient) -> None:
    answer = client.get(f"/api/pipelines/{charted.name}/charts", params={"window": "1h"}).json()
    since, until = answer.pop("since"), answer.pop("until")
    assert since < until
    samples = raw_samples(charted.dsn, charted.name)
    topic = charted.topic
    assert [(s["source"], s["epoch_id"], s["total_lag"]) for s in samples] == [
        ("commit", charted.new, 0), ("wait", None, 3), ("commit", charted.last, 0)
    ]  # fmt: skip
    assert answer == {
        "pipeline": charted.name,
        "window": "1h",
        "epochs": raw_epochs(charted.dsn, charted.name),
        "epochs_in_window": 3,
        "lag": {
            "samples": samples, "samples_in_window": 3, "every": 1, "partitions": 2,
            "partitions_shown": [{"topic": topic, "partition": 0}, {"topic": topic, "partition": 1}],
        },
    }  # fmt: skip
    last_two = client.get(f"/api/pipelines/{charted.name}/charts", params={"window": "2e"}).json()
    assert [e["epoch_id"] for e in last_two["epochs"]] == [charted.old, charted.last]
    assert last_two["epochs_in_window"] == 2
    for bad in ("0h", "91d", "501e", "1w", "x"):
        refused = client.get(f"/api/pipelines/{charted.name}/charts", params={"window": bad})
        assert (refused.status_code, refused.json()["type"]) == (422, "InvalidRequest")
        assert f"got {bad!r}" in refused.json()["error"]


POINT = re.compile(r'<(circle|rect|text) class="point[^"]*"([^>]*)>')
DATA = re.compile(r'data-([a-z-]+)="([^"]*)"')


def drawn(html: str) -> list[dict[str, str]]:
    """The ``data-*`` attributes of every point on the page, in drawing order."""
    return [dict(DATA.findall(attrs)) for _, attrs in POINT.findall(html)]


def test_the_page_draws_exactly_the_ledgers_rows(charted: Charted, client: TestClient) -> None:
    html = client.get("/", params={"pipeline": charted.name}).text  # the default window: 1d
    assert f'<section id="charts" data-pipeline="{charted.name}" data-window="1d">' in html
    epochs, samples = raw_epochs(charted.dsn, charted.name), raw_samples(charted.dsn, charted.name)
    points = sorted(drawn(html), key=lambda p: sorted(p.items()))
    assert points == expected_points(epochs, samples)
    rates = [p["value"] for p in drawn(html) if p["chart"] == "rate"]
    assert rates == [
        str(round(5 / VOTE["spark_tasks_s"], 1)),
        "unknown",
        str(round(3 / VOTE["spark_tasks_s"], 1)),
    ]
    old_phases = [
        p["phase"] for p in drawn(html) if p["chart"] == "phases" and p["epoch-id"] == str(charted.old)
    ]
    assert old_phases == ["reserve", "unknown"]  # before migration 0005: the rest is unknown, not zero
    assert '<p class="muted" id="charts-hint">' in client.get("/").text  # no pipeline chosen: no charts


def test_an_epochs_own_page(charted: Charted, client: TestClient) -> None:
    page = client.get(f"/epochs/{charted.new}")
    assert page.status_code == 200
    html = page.text
    (expected,) = [e for e in raw_epochs(charted.dsn, charted.name) if e["epoch_id"] == charted.new]
    assert re.findall(r'<tr class="phase" data-phase="(\w+)" data-value="([^"]*)">', html) == [
        *((k, str(v)) for k, v in expected["phases"].items()), ("total", str(expected["duration_s"]))
    ]  # fmt: skip
    commit_sample = raw_samples(charted.dsn, charted.name)[0]["partitions"]
    topic = charted.topic
    ranges = re.findall(r'<tr class="range" data-topic="([^"]*)" data-partition="(\d+)">(.*?)</tr>', html)
    cells = [(t, int(p), re.findall(r'<td class="num">([^<]*)</td>', row)) for t, p, row in ranges]
    # partition, start, end, offsets, records read, skipped, bad (none: the vote had no per-partition
    # counts), high watermark and lag after the commit
    assert cells == [
        (topic, 0, ["0", "0", "3", "3", "-", "-", "-", str(commit_sample[0]["high_watermark"]), "0"]),
        (topic, 1, ["1", "0", "2", "2", "-", "-", "-", str(commit_sample[1]["high_watermark"]), "0"]),
    ]
    shown_order = ("records", "bad_records", "cells_written", "tasks", "duration_s", "spark_tasks_s",
                   "vote_after_tasks_s")  # fmt: skip
    assert re.findall(r'<tr class="metric" data-key="(\w+)" data-value="([^"]*)">', html) == [
        (k, str(VOTE[k])) for k in shown_order
    ]
    assert "<th>Spark job, s (tasks&#x27; submission to last result)</th>" in html
    # links: back to the Epochs page, to the run in Airflow and to the task that committed it
    assert f'<a class="back" href="../?pipeline={charted.name}">' in html
    assert (
        '<a class="run-link" href="../../dags/eo_stream/runs/r-new" target="_top">Airflow run (grid)</a>'
        in html
    )
    assert (
        '<a class="task-link write-log" href="../../dags/eo_stream/runs/r-new/tasks/write" target="_top">'
        in html
    )
    assert (
        '<a class="task-link commit-log" href="../../dags/eo_stream/runs/run-1/tasks/t?try_number=1" '
        'target="_top">commit log (try 1)</a>'
    ) in html
    assert re.findall(r'<tr class="transition" data-from="(\w*)" data-to="(\w+)">', html) == [
        ("", "RESERVED"), ("RESERVED", "WRITTEN"), ("WRITTEN", "COMMITTED")
    ]  # fmt: skip
    missing = client.get("/epochs/999999")
    assert (missing.status_code, "epoch 999999 does not exist" in missing.text) == (404, True)
