"""Freshness of a ``@continuous`` pipeline under a steady load, against Spark Structured
Streaming (the ``freshness`` section; issue 38).

For each mode of :data:`MODES` in turn (``submit``, the default, first; then ``session`` on the
stack's Spark Connect server, which the suite starts before the section: its connection must be
in Airflow's environment when Airflow starts), a pipeline scheduled ``@continuous`` runs under
an Airflow of the benchmark's own (:func:`benchmarks.bench_airflow.bench_airflow`, the
repository's DAG template, :data:`EPOCH_SETTINGS`) over a fresh topic of ``partitions``
partitions. Its DAG is unpaused, then :class:`SteadyProducer` sends records at
``records_per_s``: the warm-up, at least ``warmup_s`` and until :data:`WARM_COMMITS` epochs
have committed, then ``seconds`` measured. When the ledger's committed epochs hold every
produced offset the DAG is paused. A record's freshness is its epoch's ``committed_at`` (the
ledger's commit, PostgreSQL's clock on this machine) minus its Kafka record timestamp (the
produce time, the same clock).

Then the peer (:mod:`benchmarks.freshness_streaming`): Structured Streaming with a 1 s
processing-time trigger writing the same records (same keys, values and rate) through the
``spark_native`` peers' writer; the query starts first, its warm-up lasts until it has caught
up (a micro-batch holds what one trigger brings, not a backlog), then ``seconds`` measured. A
record's freshness is the completion of the micro-batch that wrote it (Spark's write of
``commits/<id>`` in the checkpoint, after ``foreachBatch`` returned) minus its record timestamp.

Each run's records are checked before any figure is kept (:mod:`benchmarks.freshness_run`).
Reported per run: the measured records' p50, p99 and max, the commits (epochs or
micro-batches) that hold them, their durations and interval; the warm-up's apart; and
``ratio_p50_session_vs_streaming`` and ``ratio_p99_session_vs_streaming`` (session over the peer;
the same ``..._submit_vs_streaming``).

Run alone: ``python -m benchmarks --only freshness [--quick] [--freshness-window-s S]`` (``S``
measured seconds per run instead of the load's 300, ``--quick`` 60).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg2
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.dags.factory import stream_dag_id
from benchmarks.bench_airflow import EPOCH_SETTINGS, admin_client, bench_airflow
from benchmarks.dataset import delete_topic
from benchmarks.freshness_figures import Commit, ProducedRecord
from benchmarks.freshness_run import create_table, run_report
from benchmarks.steady_producer import SteadyProducer
from benchmarks.write_step import drop_table
from eo_devtools.stack.airflow_api import AirflowClient
from eo_devtools.stack.stack import LocalStack

MODES = ("submit", "session")
DRAIN_TIMEOUT_S = 300.0
WARM_COMMITS = 2
"""The warm-up lasts until this many commits (the first pays one-off costs, the second the
backlog produced meanwhile), and at least ``warmup_s``."""
POLL_S = 0.5


@dataclass(frozen=True)
class Load:
    """The producer's load: ``records_per_s`` for ``warmup_s`` (not counted), then ``seconds``."""

    records_per_s: float
    seconds: float
    warmup_s: float
    partitions: int = 4


FULL_LOAD = Load(1000, 300, 30)
QUICK_LOAD = Load(100, 60, 20)


def create_topic(stack: LocalStack, topic: str, partitions: int) -> None:
    """A fresh topic of ``partitions`` partitions."""
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)


def pipeline_entry(name: str, mode: str) -> dict[str, Any]:
    """The pipelines YAML entry of a ``@continuous`` pipeline over topic and table ``name``."""
    return {
        "name": name,
        "topics": [name],
        "hbase": {"table": name, "column_family": "d"},
        "mapping": {"row_key": "kafka_key"},
        "starting": {"policy": "earliest"},
        "schedule": "@continuous",
        **({"spark": {"mode": "session"}} if mode == "session" else {}),
    }


def ledger_commits(stack: LocalStack, pipeline: str) -> list[Commit]:
    """The pipeline's committed stream epochs: reserved (``created_at``) to ``committed_at``, ranges
    (none while the ledger has no schema yet)."""
    by_epoch: dict[int, tuple[float, float, dict[int, tuple[int, int]]]] = {}
    with contextlib.closing(psycopg2.connect(stack.ledger_dsn)) as connection, connection.cursor() as cur:
        cur.execute("SELECT to_regclass('eo.epochs')")
        if (cur.fetchone() or (None,))[
            0
        ] is None:  # the first epoch's reserve has not migrated the ledger yet
            return []
        cur.execute(
            """
            SELECT e.epoch_id, extract(epoch FROM e.created_at), extract(epoch FROM e.committed_at),
                   r."partition", r.start_offset, r.end_offset
              FROM eo.epochs e JOIN eo.epoch_ranges r USING (epoch_id)
             WHERE e.pipeline = %s AND e.kind = 'stream' AND e.state = 'COMMITTED'
            """,
            (pipeline,),
        )
        for epoch_id, created, committed, partition, start, end in cur.fetchall():
            entry = by_epoch.setdefault(epoch_id, (float(created), float(committed), {}))
            entry[2][partition] = (start, end)
    return [Commit(epoch_id, *entry) for epoch_id, entry in sorted(by_epoch.items())]


def holds_all(commits: Sequence[Commit], produced: Sequence[ProducedRecord]) -> bool:
    """Whether the commits' ranges reach past every produced record's offset."""
    reached: dict[int, int] = {}
    for commit in commits:
        for partition, (_, end) in commit.ranges.items():
            reached[partition] = max(reached.get(partition, 0), end)
    return all(reached.get(r.partition, 0) > r.offset for r in produced)


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``check`` until true; TimeoutError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(POLL_S)


def runs_in_state(client: AirflowClient, dag_id: str, state: str) -> int:
    """How many of ``dag_id``'s runs are in ``state``."""
    return int(client.api("GET", f"dags/{quote(dag_id)}/dagRuns?state={state}&limit=1")["total_entries"])


def stop_running_runs(client: AirflowClient, dag_id: str) -> int:
    """Mark ``dag_id``'s running runs failed (the DAG is paused: the scheduler would never
    start their remaining tasks, so they would stay running); how many there were. Called
    once every produced record is committed, so they hold no measured record."""
    runs = client.api("GET", f"dags/{quote(dag_id)}/dagRuns?state=running&limit=100")["dag_runs"]
    for run in runs:
        path = f"dags/{quote(dag_id)}/dagRuns/{quote(run['dag_run_id'], safe='')}"
        client.api("PATCH", path, {"state": "failed"})
    wait_for(lambda: runs_in_state(client, dag_id, "running") == 0, DRAIN_TIMEOUT_S, f"{dag_id} idle")
    return len(runs)


def airflow_run(stack: LocalStack, client: AirflowClient, name: str, load: Load) -> dict[str, Any]:
    """One mode's run (module docstring) on pipeline ``name``; its report."""
    dag_id = stream_dag_id(name)
    producer = SteadyProducer(stack.kafka_bootstrap, name, load.partitions)
    client.unpause(dag_id)
    warmup = producer.run(
        load.records_per_s, load.warmup_s, until=lambda: len(ledger_commits(stack, name)) >= WARM_COMMITS
    )
    measured = producer.run(load.records_per_s, load.seconds)
    wait_for(
        lambda: holds_all(ledger_commits(stack, name), producer.produced),
        DRAIN_TIMEOUT_S,
        f"{name}: epochs committing every produced record",
    )
    client.api("PATCH", f"dags/{quote(dag_id)}", {"is_paused": True})
    stopped = stop_running_runs(client, dag_id)
    report = run_report(stack, name, warmup, measured, ledger_commits(stack, name))
    report["dag_runs"] = {state: runs_in_state(client, dag_id, state) for state in ("success", "failed")}
    report["dag_runs"]["stopped_after_the_drain"] = stopped
    return report


def ratio(numerator: dict[str, Any], denominator: dict[str, Any], key: str) -> float:
    """``numerator``'s measured ``key`` over ``denominator``'s."""
    return round(float(numerator["measured"][key]) / float(denominator["measured"][key]), 2)


def run(
    stack: LocalStack,
    *,
    quick: bool,
    load: Load | None = None,
    modes: Sequence[str] = MODES,
    window_s: float | None = None,
) -> dict[str, Any]:
    """The section (module docstring): ``{"freshness": {...}}``; ``window_s`` replaces the
    load's measured seconds. Raises when a run's records do not check out or its epochs do not
    commit them in time."""
    from benchmarks import freshness_streaming

    load = load or (QUICK_LOAD if quick else FULL_LOAD)
    if window_s is not None:
        load = replace(load, seconds=window_s)
    tag = uuid.uuid4().hex[:8]
    names = {mode: f"eo_bench_fresh_{mode}_{tag}" for mode in modes}
    report: dict[str, Any] = {"load": asdict(load), "airflow_settings": dict(EPOCH_SETTINGS)}
    with contextlib.ExitStack() as cleanup:
        for name in names.values():
            create_topic(stack, name, load.partitions)
            cleanup.callback(delete_topic, stack.kafka_bootstrap, name)
            create_table(stack, name)
            cleanup.callback(drop_table, stack, name)
        base = Path(tempfile.mkdtemp(prefix="eo-bench-freshness-", dir="/tmp"))
        cleanup.callback(shutil.rmtree, base, True)
        with bench_airflow(
            stack, EPOCH_SETTINGS, base, [pipeline_entry(n, m) for m, n in names.items()]
        ) as airflow:
            client = admin_client(airflow)
            for name in names.values():
                client.wait_for_dag(stream_dag_id(name), timeout=600)
            for mode, name in names.items():
                report[mode] = airflow_run(stack, client, name, load)
    report["structured_streaming"] = freshness_streaming.run(stack, load)
    for mode in modes:
        for key in ("p50_s", "p99_s"):
            report[f"ratio_{key[:3]}_{mode}_vs_streaming"] = ratio(
                report[mode], report["structured_streaming"], key
            )
    return {"freshness": report}
