"""The deferrable wait step under the real scheduler and triggerer (the session's
``airflow_server``), with Spark, the ledger, Apache Kafka and Apache HBase all real.

One pipeline, its partitions already pinned and nothing to read:

1. a stream run defers: its ``wait`` task is ``deferred`` on ``RecordsAvailableTrigger``
   in the triggerer, no epoch is opened, no spark-submit runs, reserve has not started;
2. records arrive: the trigger fires, the run reserves, writes and commits exactly them
   (ledger ranges, HBase rows, the group's offsets, the wait task's XCom);
3. a second run finds nothing again and ends by the wait's timeout: ``wait`` and
   everything after it skipped, no new epoch;
4. the lag samples the triggerer's polls and the commit stored: exactly the first poll of
   each wait, the poll that found the records, and the commit's.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import happybase
import pytest

from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.dags.factory import stream_dag_id
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochKind, EpochState, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.protocol import EpochProtocol, NothingToReserve
from tests.airflow_server import AirflowServer
from tests.chart_rows import raw_samples, sample_rows
from tests.conftest import StackInfo
from tests.kafka_helpers import produce

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.integration]

TRIGGER = "airflow_provider_eo.triggers.records_available.RecordsAvailableTrigger"
TIMEOUT_SECONDS = 10  # the second run's whole wait: keep the test short
RECORDS = 7


@pytest.fixture
def conn_env(stack: StackInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def topic(kafka_topic_factory: Any) -> str:
    return str(kafka_topic_factory(partitions=2, prefix="eo-wait"))


@pytest.fixture
def ledger(stack: StackInfo) -> Iterator[Ledger]:
    with Ledger(stack.ledger_dsn) as opened:
        yield opened


def spark_submits_of(pipeline: str) -> list[str]:
    """Command lines of running spark-submit launchers or JVMs that name ``pipeline``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if pipeline in text and ("spark-submit" in text or "SparkSubmit" in text):
            found.append(text)
    return found


def wait_until_deferred(
    server: AirflowServer, dag_id: str, run_id: str, timeout: float = 120
) -> dict[str, Any]:
    """The run's task states once ``wait`` is deferred (AssertionError after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while (states := server.task_states(dag_id, run_id)).get("wait") != "deferred":
        assert states.get("wait") in (None, "scheduled", "queued", "running"), states
        assert time.monotonic() < deadline, f"wait not deferred after {timeout:g}s: {states}"
        time.sleep(0.5)
    return states


def wait_for_samples(
    stack: StackInfo, pipeline: str, count: int, timeout: float = 120
) -> list[dict[str, Any]]:
    """The pipeline's lag samples once there are ``count`` (AssertionError after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while len(found := raw_samples(stack.ledger_dsn, pipeline)) < count:
        assert time.monotonic() < deadline, f"{len(found)} lag samples of {pipeline} after {timeout:g}s"
        time.sleep(0.5)
    return found


def task_instance(server: AirflowServer, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
    path = f"dags/{quote(dag_id)}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
    return dict(server.api("GET", path))


def test_stream_run_waits_in_the_triggerer_then_commits_what_arrives_then_times_out(
    stack: StackInfo, airflow_server: AirflowServer, conn_env: None, topic: str, ledger: Ledger
) -> None:
    name = f"wt_{uuid.uuid4().hex[:10]}"
    group = f"eo-{name}"
    airflow_server.add_pipeline(
        {
            "name": name,
            "topics": [topic],
            "group_id": group,
            "hbase": {"table": name, "column_family": "d"},
            "wait": {"enabled": True, "timeout_seconds": TIMEOUT_SECONDS, "poll_seconds": 1},
        }
    )
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        hbase.create_table(name, {"d": {}})
    finally:
        hbase.close()
    # pin both partitions (at 0) as an earlier run would have: nothing is pending
    spec = load_pipeline(name, airflow_server.pipelines_file)
    outcome = EpochProtocol(ledger, kafka=EoKafkaHook).reserve_stream(spec, RunIdentity("test", "pin"))
    assert isinstance(outcome, NothingToReserve)
    assert ledger.cursors(name) == {(topic, 0): 0, (topic, 1): 0}
    dag_id = stream_dag_id(name)
    airflow_server.wait_for_dag(dag_id)

    # 1. no data: the wait task defers to the triggerer; nothing else happens
    first = airflow_server.trigger(dag_id)
    states = wait_until_deferred(airflow_server, dag_id, first)
    assert states == {
        "recover": "success",
        "wait": "deferred",
        "reserve": None,
        "write": None,
        "commit": None,
    }
    trigger = task_instance(airflow_server, dag_id, first, "wait")["trigger"]
    assert trigger["classpath"] == TRIGGER
    kwargs = str(trigger["kwargs"])
    assert all(secret not in kwargs for secret in _secrets(stack)), "a secret in the stored trigger kwargs"
    assert ledger.epochs(EpochFilter(pipeline=name)) == []
    assert spark_submits_of(name) == []
    first_poll = wait_for_samples(stack, name, 1)  # the trigger polls (the triggerer picked it up)
    assert [(s["source"], s["total_lag"]) for s in first_poll] == [("wait", 0)]

    # 2. records arrive (one batch, partition 1): the trigger fires and the run commits them
    produce(
        stack.kafka_bootstrap,
        topic,
        [(f"k{i}", json.dumps({"v": f"x{i}"})) for i in range(RECORDS)],
        partition=1,
    )
    assert airflow_server.wait_for_run(dag_id, first, timeout=300) == "success", airflow_server.log(
        "scheduler"
    )[-3000:]
    assert airflow_server.task_states(dag_id, first) == dict.fromkeys(
        ["recover", "wait", "reserve", "write", "commit"], "success"
    )
    xcom = airflow_server.api(
        "GET", f"dags/{dag_id}/dagRuns/{quote(first, safe='')}/taskInstances/wait/xcomEntries/return_value"
    )
    assert xcom["value"] == {
        "pipeline": name,
        "pending": RECORDS,
        "partitions": [
            {"topic": topic, "partition": 0, "pending": 0},
            {"topic": topic, "partition": 1, "pending": RECORDS},
        ],
        "unpinned": [],
        "out_of_range": [],
    }
    (epoch,) = ledger.epochs(EpochFilter(pipeline=name))
    assert (epoch.kind, epoch.state, epoch.run_id) == (EpochKind.STREAM, EpochState.COMMITTED, first)
    assert [(r.topic, r.partition, r.start, r.end) for r in epoch.ranges] == [
        (topic, 0, 0, 0),
        (topic, 1, 0, RECORDS),
    ]
    assert EoKafkaHook().committed_offsets(group, [(topic, 0), (topic, 1)]) == {
        (topic, 0): 0,
        (topic, 1): RECORDS,
    }
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        rows = dict(hbase.table(name).scan())
    finally:
        hbase.close()
    assert rows == {f"k{i}".encode(): {b"d:v": f"x{i}".encode()} for i in range(RECORDS)}

    # 3. nothing new: the second run waits in the triggerer, times out and skips the rest
    second = airflow_server.trigger(dag_id)
    wait_until_deferred(airflow_server, dag_id, second)
    assert airflow_server.wait_for_run(dag_id, second, timeout=120) == "success"
    assert airflow_server.task_states(dag_id, second) == {
        "recover": "success",
        "wait": "skipped",
        "reserve": "skipped",
        "write": "skipped",
        "commit": "skipped",
    }
    assert [e.epoch_id for e in ledger.epochs(EpochFilter(pipeline=name))] == [epoch.epoch_id]
    assert ledger.cursors(name) == {(topic, 0): 0, (topic, 1): RECORDS}

    # 4. lag samples: (source, epoch, total lag, [(topic, partition, cursor, high watermark, lag)])
    assert sample_rows(stack.ledger_dsn, name) == [
        ("wait", None, 0, [(topic, 0, 0, 0, 0), (topic, 1, 0, 0, 0)]),  # the first run's first poll
        (
            "wait",
            None,
            RECORDS,
            [(topic, 0, 0, 0, 0), (topic, 1, 0, RECORDS, RECORDS)],
        ),  # the poll that fired
        ("commit", epoch.epoch_id, 0, [(topic, 0, 0, 0, 0), (topic, 1, RECORDS, RECORDS, 0)]),
        (
            "wait",
            None,
            0,
            [(topic, 0, 0, 0, 0), (topic, 1, RECORDS, RECORDS, 0)],
        ),  # the second run's first poll
    ]


def _secrets(stack: StackInfo) -> list[str]:
    """Passwords of the stack's connections (JSON or URI form), to prove none is stored."""
    from airflow_provider_eo.clients.connections import parse_connection

    found = []
    for env_name, value in stack.conn_env.items():
        password = parse_connection(env_name, value).password
        if password:
            found.append(password)
    return found
