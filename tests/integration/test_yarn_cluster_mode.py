"""The write step in YARN cluster deploy mode on the stack's real YARN (Hadoop 3.5.0 RM + NM).

Each test runs ``WriteEpochOperator`` (or the backfill chunk's) with ``spark.master: yarn``
and ``deploy_mode: cluster`` through the Spark provider's hook: the driver runs in a YARN
container and gets its connections from the private file shipped with the application.

* the stream epoch, package ``installed`` (the venv's Python, which has the provider):
  exact cells, ledger row and group offsets, and the secrets check of that application;
* one backfill chunk, package ``zip``: driver and executors on the stack's executor Python,
  which cannot import the provider, so only the shipped zip can (the driver's log line says
  where the package came from);
* the Airflow task killed: ``on_kill`` kills the application through the RM; recovery and
  the next try settle the epoch.

One YARN application costs about 40-60 s here; the module runs three and a half.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import happybase
import pytest

from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochState, Ledger
from airflow_provider_eo.operators.backfill_chunks import WriteBackfillChunkOperator
from airflow_provider_eo.operators.write import WriteEpochOperator
from airflow_provider_eo.operators.yarn_tracking import YarnApplicationFailed
from airflow_provider_eo.spark.driver.driver_environment import DRIVER_ENV_FILE
from eo_devtools.stack.spark_services import executor_python
from tests.conftest import StackInfo
from tests.integration.operator_support import commit, reserve
from tests.integration.yarn_write_support import (  # noqa: F401 (fixtures)
    YarnRecords,
    cluster_spark,
    ledger_role_fixture,
    places_holding,
    secret_connections,
    use_yarn_environment,
    write_pipelines,
    yarn_records_fixture,
)
from tests.kafka_helpers import created_topic, produce
from tests.task_context import task_context

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 2
PER_PARTITION = 10


def records(partition: int) -> list[tuple[str, bytes]]:
    return [
        (f"p{partition}-k{i}", json.dumps({"n": i, "part": partition}).encode()) for i in range(PER_PARTITION)
    ]


EXPECTED = {
    f"p{p}-k{i}".encode(): {b"d:n": str(i).encode(), b"d:part": str(p).encode()}
    for p in range(PARTITIONS)
    for i in range(PER_PARTITION)
}


@pytest.fixture
def world(
    stack: StackInfo,
    yarn_records: YarnRecords,
    ledger_role: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[dict[str, Any]]:
    """A topic with 2 x 10 records, an HBase table, the YARN environment with secret
    connections, and an event log dir under the state dir."""
    conn_env, found = secret_connections(stack, *ledger_role)
    use_yarn_environment(monkeypatch, stack, conn_env)
    name = f"yarn_{uuid.uuid4().hex[:8]}"
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(name, {"d": {"max_versions": 1}})
    hbase.close()  # Thrift drops a connection idle for 60 s: the test takes longer
    event_log = stack.state_dir / "yarn-event-logs" / name
    event_log.mkdir(parents=True)
    try:
        with created_topic(stack.kafka_bootstrap, partitions=PARTITIONS, prefix="yarn") as topic:
            for p in range(PARTITIONS):
                produce(stack.kafka_bootstrap, topic, records(p), partition=p)
            yield {"name": name, "topic": topic, "secrets": found, "event_log": event_log, "tmp": tmp_path}
    finally:
        hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
        hbase.delete_table(name, disable=True)
        hbase.close()


def scan(stack: StackInfo, table: str) -> dict[bytes, dict[bytes, bytes]]:
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        return dict(hbase.table(table).scan())
    finally:
        hbase.close()


def pipelines_file(world: dict[str, Any], spark: dict[str, Any], **entry: Any) -> str:
    name = world["name"]
    full = {"name": name, "group_id": f"g-{name}", "topics": [world["topic"]], "hbase": {"table": name}}
    return write_pipelines(world["tmp"] / f"{name}.yaml", {**full, "spark": spark, **entry})


def event_log_conf(world: dict[str, Any]) -> dict[str, str]:
    """Spark's event log on, uncompressed so that a search reads the events as written."""
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": world["event_log"].as_uri(),
        "spark.eventLog.compress": "false",
    }


def driver_log(yarn_records: YarnRecords, app_id: str) -> str:
    """The driver's output: the AM container's (its id ends in ``_000001``) stdout, where
    Spark puts the Python driver's output, and stderr."""
    logs = yarn_records.container_logs(app_id)
    return "".join(
        text
        for path, text in logs.items()
        if path.parent.name.endswith("_000001") and path.name in ("stdout", "stderr")
    )


def group_offsets(name: str, topic: str) -> dict[tuple[str, int], int | None]:
    return EoKafkaHook().committed_offsets(f"g-{name}", [(topic, p) for p in range(PARTITIONS)])


def yarn_write(name: str, file: str, summary: dict[str, Any]) -> WriteEpochOperator:
    """The write step of the epoch ``summary`` reserved, on the ``spark_yarn`` connection."""
    return WriteEpochOperator(
        task_id="write",
        pipeline=name,
        epoch_id=summary["epoch_id"],
        fencing_token=summary["fencing_token"],
        spec=load_pipeline(name, file),
        spark_conn_id="spark_yarn",
    )


def with_credential_file(monkeypatch: pytest.MonkeyPatch, world: dict[str, Any]) -> tuple[Path, str]:
    """The Kafka connection naming a private key file (mode 600, a marker inside) as
    ``ssl.key.location``: a credential file the operator ships in cluster mode. The connection
    stays PLAINTEXT, where librdkafka reads no key file, so only the shipping is under test."""
    marker = f"Pk7marker{uuid.uuid4().hex[:6]}"
    key_file = world["tmp"] / "client.key"
    key_file.touch(mode=0o600)
    key_file.write_text(f"-----BEGIN PRIVATE KEY-----\n{marker}\n-----END PRIVATE KEY-----\n")
    kafka = json.loads(os.environ["AIRFLOW_CONN_EO_KAFKA"])
    kafka["extra"] = {**kafka.get("extra", {}), "ssl.key.location": str(key_file)}
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", json.dumps(kafka))
    return key_file, marker


def test_a_stream_epoch_in_cluster_mode_writes_exactly_and_leaks_no_secret(
    stack: StackInfo,
    yarn_records: YarnRecords,
    world: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One stream epoch, the package installed on the cluster's Python (the venv's).

    The secrets check covers every place YARN and Spark record an application: the event
    log (whose ``SparkListenerEnvironmentUpdate`` event is exactly what the Spark UI's and
    the History Server's Environment page render: epochs run with ``spark.ui.enabled=false``,
    so the event is the page), the RM's REST API for the application and its attempts, the
    NodeManager's launch files (``launch_container.sh``, ``directory.info``, the localized
    ``__spark_conf__``; kept by the stack's ``delete.debug-delay-sec``), the containers'
    logs, and spark-submit's output as the task logged it.
    """
    name, topic, found = world["name"], world["topic"], world["secrets"]
    key_file, key_marker = with_credential_file(monkeypatch, world)
    spark = cluster_spark(
        stack.state_dir, package="installed", python=sys.executable, **event_log_conf(world)
    )
    file = pipelines_file(world, spark)
    summary = reserve(name, file)
    write = yarn_write(name, file, summary)
    write.execute(task_context())
    task_log = capsys.readouterr().out  # the hook logs spark-submit's output (Airflow's task logger)
    assert write.yarn_tracking is not None and write.yarn_tracking.application is not None
    app = write.yarn_tracking.application
    assert (app.state, app.final_status) == ("FINISHED", "SUCCEEDED")
    assert commit(name, file, summary["epoch_id"])["state"] == "COMMITTED"

    assert scan(stack, name) == EXPECTED
    with Ledger(stack.ledger_dsn) as ledger:
        epoch = ledger.get_epoch(summary["epoch_id"])
        voted = [(t.from_state, t.to_state, t.actor) for t in ledger.history(summary["epoch_id"])[1:]]
    assert (epoch.state, (epoch.metrics or {})["records"], (epoch.metrics or {})["cells_written"]) == (
        EpochState.COMMITTED, PARTITIONS * PER_PARTITION, PARTITIONS * PER_PARTITION * 2
    )  # fmt: skip
    assert voted[0] == ("RESERVED", "WRITTEN", "eo_stream/run-1/t try 1")
    assert group_offsets(name, topic) == {(topic, p): PER_PARTITION for p in range(PARTITIONS)}

    # where the connections went: the driver loaded them from its file (and nothing else had them)
    loaded = (
        "environment_file=AIRFLOW_CONN_EO_HBASE,AIRFLOW_CONN_EO_KAFKA,AIRFLOW_CONN_EO_LEDGER,EO_PIPELINE_SPEC"
    )
    assert loaded in driver_log(yarn_records, app.id)
    # the credential file: shipped under its own name, renamed in the driver's connection, and
    # in the driver's working directory with the same bytes, readable by the user only
    digest = hashlib.sha256(key_file.read_bytes()).hexdigest()[:16]
    shipped = "eo_kafka.ssl.key.location=eo-eo_kafka-ssl_key_location"
    assert f"credential file {shipped} mode=0500 sha256={digest}" in driver_log(yarn_records, app.id)
    assert key_marker not in task_log and str(key_file) in task_log  # the path travels, not the key
    # package installed: nothing shipped, the driver imported the cluster Python's copy
    submit_command = next(line for line in task_log.splitlines() if "Spark-Submit cmd" in line)
    assert "--py-files" not in submit_command
    assert "airflow_provider_eo.zip" not in driver_log(yarn_records, app.id)
    event_logs = {p: p.read_text() for p in sorted(world["event_log"].rglob("events_*"))}
    assert [p.parent.name for p in event_logs] == [f"eventlog_v2_{app.id}_1"]  # this application's
    environment = json.loads(
        next(
            line for text in event_logs.values() for line in text.splitlines() if "EnvironmentUpdate" in line
        )
    )
    properties = dict(environment["Spark Properties"])
    assert write.yarn_tracking.tag in properties["spark.yarn.tags"].split(",")
    assert properties["spark.yarn.maxAppAttempts"] == "1"
    node_files = yarn_records.node_files()
    assert any(p.name == "launch_container.sh" and app.id in str(p) for p in node_files)
    # YARN keeps each shipped file in the NodeManager's private cache of the submitting user
    # (usercache/<user>/filecache/<n>/), readable by that user only: the one place on a node
    copies = {
        p: text
        for p, text in node_files.items()
        if p.name in (DRIVER_ENV_FILE, "client.key") and "filecache" in p.parts
    }
    driver_copy = next(
        yarn_records.state_dir.glob(f"yarn/nm-local/usercache/*/appcache/{app.id}/*_000001/{DRIVER_ENV_FILE}")
    )
    assert all(secret in copies[driver_copy.resolve()] for secret in found.all())  # the search finds them
    assert {oct(p.stat().st_mode & 0o777) for p in copies} == {oct(0o500)}
    places: dict[Any, str] = {
        **{f"event log {p.name}": text for p, text in event_logs.items()},
        **yarn_records.app_records(app.id),
        **{p: text for p, text in node_files.items() if p not in copies},
        "spark-submit output (task log)": task_log,
    }
    assert "Spark-Submit cmd" in task_log
    every = [*found.all(), key_marker]
    # what Airflow renders and shows for the task (its template fields) holds none of them either
    places.update({f"rendered {field}": repr(getattr(write, field)) for field in write.template_fields})
    assert {secret: places_holding(secret, places) for secret in every} == {s: [] for s in every}
    assert list(stack.state_dir.glob(f"yarn/staging/*/.sparkStaging/{app.id}")) == []  # the AM's cleanup


def test_a_backfill_chunk_in_cluster_mode_imports_the_shipped_zip(
    stack: StackInfo, yarn_records: YarnRecords, world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One backfill chunk, package ``zip``: the driver and executors run the stack's executor
    Python, which cannot import the provider, and spark-submit gets no ``PYTHONPATH`` (Spark's
    YARN client would pass it on to the containers), so only the zip can provide it."""
    name, topic = world["name"], world["topic"]
    python = executor_python(stack.state_dir)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    probe = subprocess.run(  # in a directory of its own, like a container: not the repository
        [str(python), "-c", "import airflow_provider_eo"], capture_output=True, text=True, cwd=world["tmp"]
    )
    assert "No module named 'airflow_provider_eo'" in probe.stderr
    file = pipelines_file(world, cluster_spark(stack.state_dir, package="zip", python=str(python)))
    chunk = [{"topic": topic, "partition": p, "start": 2, "end": PER_PARTITION} for p in range(PARTITIONS)]
    write = WriteBackfillChunkOperator(
        task_id="chunk.write",
        pipeline=name,
        ranges=chunk,
        spec=load_pipeline(name, file),
        spark_conn_id="spark_yarn",
    )
    summary = write.execute(task_context("bf-1", dag_id="eo_backfill"))
    assert (summary["kind"], summary["state"], summary["records_total"]) == ("backfill", "WRITTEN", 16)
    assert commit(name, file, summary["epoch_id"])["state"] == "COMMITTED"

    assert write.yarn_tracking is not None and write.yarn_tracking.application is not None
    app_id = write.yarn_tracking.application.id
    package = re.search(r"driver up class_archive=\S+ package=(\S+)", driver_log(yarn_records, app_id))
    assert package is not None and package.group(1).endswith("/airflow_provider_eo.zip/airflow_provider_eo")
    assert scan(stack, name) == {
        row: cells for row, cells in EXPECTED.items() if int(row.split(b"k")[1]) >= 2
    }
    with Ledger(stack.ledger_dsn) as ledger:
        epoch = ledger.get_epoch(summary["epoch_id"])
    assert (epoch.state, epoch.kind, (epoch.metrics or {})["records"]) == (
        EpochState.COMMITTED,
        "backfill",
        16,
    )
    assert group_offsets(name, topic) == {
        (topic, p): None for p in range(PARTITIONS)
    }  # a backfill moves none


def run_in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, list[BaseException]]:
    failures: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as error:
            failures.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, failures


def wait_for(predicate: Callable[[], Any], timeout_s: float = 180.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"not reached within {timeout_s} s")


def test_the_airflow_task_killed_kills_the_application_and_the_next_try_settles_the_epoch(
    stack: StackInfo, yarn_records: YarnRecords, world: dict[str, Any]
) -> None:
    """``on_kill``, as Airflow calls it when the task is killed, kills the YARN application
    by its tag through the RM (spark-submit has long returned: waitAppCompletion=false); the
    write fails with the RM's KILLED state, after removing the staging dir the killed
    ApplicationMaster left (the driver's environment file in it). The task's next try (same
    run, same epoch and token; on ``local[2]`` here to spare a second YARN application)
    writes the epoch, and the commit publishes it: exact cells, ledger rows and offsets."""
    name, topic = world["name"], world["topic"]
    spark = cluster_spark(stack.state_dir, package="installed", python=sys.executable)
    file = pipelines_file(world, spark)
    summary = reserve(name, file)
    write = yarn_write(name, file, summary)
    thread, failures = run_in_thread(lambda: write.execute(task_context()))
    tag = wait_for(lambda: write.yarn_tracking and write.yarn_tracking.tag)
    app = wait_for(lambda: [a for a in yarn_records.apps_tagged(tag) if a["state"] == "RUNNING"])[0]
    write.on_kill()
    thread.join(120)
    assert not thread.is_alive()
    final = wait_for(
        lambda: [a for a in yarn_records.apps_tagged(tag) if a["state"] in ("KILLED", "FINISHED", "FAILED")]
    )
    assert [(a["id"], a["state"], a["finalStatus"]) for a in final] == [(app["id"], "KILLED", "KILLED")]
    assert len(failures) == 1 and isinstance(failures[0], YarnApplicationFailed)
    assert f"YARN application {app['id']} ended KILLED with final status KILLED" in str(failures[0])
    # the killed AM could not delete its staging dir (with the driver's file): the write step did
    assert list(stack.state_dir.glob(f"yarn/staging/*/.sparkStaging/{app['id']}")) == []

    local = pipelines_file(world, {"master": "local[2]"})
    retry = WriteEpochOperator(
        task_id="write",
        pipeline=name,
        epoch_id=summary["epoch_id"],
        fencing_token=summary["fencing_token"],
        spec=load_pipeline(name, local),
    )
    second_try = task_context()
    second_try["ti"].try_number = 2
    retry.execute(second_try)
    assert commit(name, local, summary["epoch_id"])["state"] == "COMMITTED"
    assert scan(stack, name) == EXPECTED
    with Ledger(stack.ledger_dsn) as ledger:
        history = [(t.from_state, t.to_state, t.actor) for t in ledger.history(summary["epoch_id"])]
    assert history[1:] == [
        ("RESERVED", "WRITTEN", "eo_stream/run-1/t try 2"),
        ("WRITTEN", "COMMITTED", history[2][2]),
    ]
    assert group_offsets(name, topic) == {(topic, p): PER_PARTITION for p in range(PARTITIONS)}
