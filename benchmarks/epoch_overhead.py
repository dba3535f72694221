"""Fixed overhead of one epoch under a real Airflow scheduler (benchmark, not a test).

``run(stack, quick=...)`` starts an Airflow of its own on the local stack's PostgreSQL
(api-server, scheduler with LocalExecutor, dag-processor, triggerer; its own metadata
database and DAG folder, so a developer's stack Airflow is never touched), with
:data:`EPOCH_SETTINGS` unless ``settings`` are given. Its DAG folder holds the
repository's DAG template, four pipelines over fresh 1-partition topics that differ only in
their ``spark`` section (:func:`spark_section`: ``session`` writes through Spark Connect,
``default`` sets nothing, what a pipeline gets
from the DAG template; ``tuned`` sets the start-up levers itself, with an archive the
benchmark builds; ``spark_defaults`` turns every lever off, Spark's own defaults), and a floor
DAG (:mod:`benchmarks.epoch_overhead_floor_dag`).

Measured, in one run (a warm-up epoch per pipeline first, reported apart; the ``default``
one records the operator's class-data archive):

* ``epoch_overhead_s``: a 1-record ``default`` stream epoch, from the DAG run's ``start_date``
  to the ``commit`` task's ``end_date`` (median of 3 interleaved with the other variants';
  1 with ``quick``); ``epoch_overhead_tuned_s`` and ``epoch_overhead_spark_defaults_s`` the
  same for the other variants;
* ``epoch_overhead_session_s``: the same for a pipeline in session mode on the stack's Spark
  Connect server (started when it runs none), against issue 38's target of 2.5 s;
* ``epoch_overhead_parts`` (``default``), ``epoch_overhead_tuned_parts``,
  ``epoch_overhead_spark_defaults_parts``: per task the scheduling gaps, start-up,
  ``execute`` and finish; inside ``write`` the driver's timeline and Spark's Python worker
  times; ``summary``: the issue's categories (:mod:`benchmarks.epoch_overhead_parts`);
* floors: the floor DAG (four no-op tasks of the same shape) and an empty ``spark-submit``
  with each Spark lever added in turn (:func:`submit_levers`), and
  ``ratio_overhead_vs_floor`` = ``epoch_overhead_s / (floor DAG + empty spark-submit)``;
  against the floor DAG alone (session mode starts no spark-submit): ``ratio_overhead_vs_floor_dag``
  (submit mode's default) and ``ratio_session_vs_floor_dag``, and ``ratio_session_vs_submit``.

Run alone: ``python -m benchmarks.epoch_overhead --state-dir /tmp/eo-stack [--quick]``
(starts the stack's data services when they are not running; prints one JSON object).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import happybase
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.dags.factory import stream_dag_id
from benchmarks.bench_airflow import EPOCH_SETTINGS, admin_client, bench_airflow
from benchmarks.epoch_overhead_parts import idle_cpu_share, run_parts, spark_submit_floor
from eo_devtools.stack.airflow_api import AirflowClient
from eo_devtools.stack.process import read_pid
from eo_devtools.stack.stack import LocalStack

FLOOR_DAG = Path(__file__).with_name("epoch_overhead_floor_dag.py")
FLOOR_DAG_ID = "eo_bench_floor"
TARGET_S = 5.0
VARIANTS = ("default", "tuned", "spark_defaults", "session")
SESSION_TARGET_S = 2.5
"""Issue 38's target for one epoch in session mode under the scheduler."""
#: Every start-up lever off: what Spark itself does with a pipeline's settings unset.
SPARK_DEFAULTS = {
    "spark.ui.enabled": "true",
    "spark.driver.extraJavaOptions": "",
    "spark.python.daemon.module": "pyspark.daemon",
}
TUNED_DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Short-lived driver JVM: C1 only (no C2 compile threads), the serial collector (no GC threads)."""
DAEMON_MODULE = "airflow_provider_eo.spark.pyspark_startup"


def spark_section(variant: str, archive: Path) -> dict[str, Any]:
    """The pipeline's ``spark`` section for a variant: ``default`` none (the operator's start-up
    defaults apply), ``tuned`` the levers set by the pipeline (:data:`TUNED_DRIVER_JAVA_OPTIONS`
    with the benchmark's class-data archive, the Python worker daemon that imports the installed
    PySpark, no UI), ``spark_defaults`` :data:`SPARK_DEFAULTS`, ``session`` session mode on the
    stack's Spark Connect server (docs/spark.md, "Session mode")."""
    if variant == "default":
        return {}
    if variant == "session":
        return {"mode": "session"}
    if variant == "spark_defaults":
        return {"conf": dict(SPARK_DEFAULTS)}
    return {
        "conf": {
            "spark.ui.enabled": "false",
            "spark.driver.extraJavaOptions": f"{TUNED_DRIVER_JAVA_OPTIONS} -XX:SharedArchiveFile={archive}",
            "spark.python.daemon.module": DAEMON_MODULE,
        }
    }


def declare_pipelines(stack: LocalStack, names: Mapping[str, str], archive: Path) -> list[dict[str, Any]]:
    """Per variant -> pipeline name: a fresh 1-partition topic (named like the pipeline) and
    HBase table; returns the pipelines (pipelines YAML entries)."""
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    for future in admin.create_topics(
        [NewTopic(n, num_partitions=1, replication_factor=1) for n in names.values()]
    ).values():
        future.result(60)
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        for name in names.values():
            connection.create_table(name, {"d": {}})
    finally:
        connection.close()
    entries = [
        {
            "name": name,
            "topics": [name],
            "hbase": {"table": name, "column_family": "d"},
            "mapping": {"row_key": "kafka_key"},
            "starting": {"policy": "earliest"},
            **({"spark": spark_section(variant, archive)} if variant != "default" else {}),
        }
        for variant, name in names.items()
    ]
    return entries


def produce_one(bootstrap: str, topic: str, n: int) -> None:
    """One JSON record (key ``k<n>``), delivered before returning."""
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=f"k{n}", value=json.dumps({"n": n, "s": "overhead"}))
    if producer.flush(60):
        raise RuntimeError(f"record {n} to {topic} not delivered within 60 s")


def timed_run(client: AirflowClient, home: Path, dag_id: str) -> dict[str, Any]:
    """Trigger ``dag_id``, wait for success; its total and parts (raises if the run failed)."""
    run_id = client.trigger(dag_id)
    state = client.wait_for_run(dag_id, run_id, timeout=600)
    if state != "success":
        raise RuntimeError(f"{dag_id}/{run_id} {state}: {client.task_states(dag_id, run_id)}")
    path = f"dags/{quote(dag_id)}/dagRuns/{quote(run_id, safe='')}"
    run = client.api("GET", path)
    tis = client.api("GET", f"{path}/taskInstances?limit=100")["task_instances"]
    return run_parts(run, tis, home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}")


def submit_levers(archive: Path) -> dict[str, tuple[list[str], dict[str, str], bool]]:
    """Lever -> (spark-submit options, environment, driver imports the installed PySpark) for the
    empty-app floor, each lever added to the previous ones: ``none``; ``jit_gc`` (driver JVM
    flags); ``cds`` (+ the class-data archive); ``all`` (+ the installed PySpark in the driver
    and the workers); ``launcher`` (+ the same JVM flags for spark-submit's launcher JVM)."""
    java = f"--conf=spark.driver.extraJavaOptions={TUNED_DRIVER_JAVA_OPTIONS}"
    cds = f"{java} -XX:SharedArchiveFile={archive}"
    daemon = f"--conf=spark.python.daemon.module={DAEMON_MODULE}"
    return {
        "none": ([], {}, False),
        "jit_gc": ([java], {}, False),
        "cds": ([cds], {}, False),
        "all": ([cds, daemon], {}, True),
        "launcher": ([cds, daemon], {"SPARK_LAUNCHER_OPTS": TUNED_DRIVER_JAVA_OPTIONS}, True),
    }


def run(stack: LocalStack, *, quick: bool, settings: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Measure (see the module doc); ``settings``: Airflow settings (default :data:`EPOCH_SETTINGS`).

    ``quick``: one measured epoch per variant instead of three."""
    tag = uuid.uuid4().hex[:8]
    names = {variant: f"eo_bench_overhead_{variant}_{tag}" for variant in VARIANTS}
    chosen = EPOCH_SETTINGS if settings is None else settings
    reps = 1 if quick else 3
    epochs: dict[str, list[dict[str, Any]]] = {variant: [] for variant in VARIANTS}
    submits: dict[str, list[dict[str, float]]] = {}
    base = Path(tempfile.mkdtemp(prefix="eo-bench-overhead-", dir="/tmp"))
    archive = base / "spark-driver.jsa"
    # the class-data archive, as a deployment builds it once (JDK 19+: -XX:+AutoCreateSharedArchive)
    dump = f"{TUNED_DRIVER_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={archive}"
    with contextlib.ExitStack() as cleanup:  # undone in reverse: Airflow, the server, the files
        cleanup.callback(shutil.rmtree, base, True)
        spark_submit_floor([f"--conf=spark.driver.extraJavaOptions={dump}"])
        if stack.spark_connect_port is None:  # a server that ran before is left running
            cleanup.callback(stack.spark_connect_down)
        stack.spark_connect_up()  # the session variant's server (before Airflow: its connection)
        pipelines = declare_pipelines(stack, names, archive)
        airflow = cleanup.enter_context(bench_airflow(stack, chosen, base, pipelines, (FLOOR_DAG,)))
        cfg = airflow.config
        client = admin_client(airflow)
        for waited in (*(stream_dag_id(n) for n in names.values()), FLOOR_DAG_ID):
            client.wait_for_dag(waited, timeout=600)
            client.unpause(waited)
        warmups = {}
        for variant, name in names.items():  # the first run of a DAG pays one-off costs
            produce_one(stack.kafka_bootstrap, name, 0)
            warmups[variant] = timed_run(client, cfg.home, stream_dag_id(name))["total_s"]
        floors = [timed_run(client, cfg.home, FLOOR_DAG_ID) for _ in range(2)]
        scheduler = next(s for s in airflow.services if s.name == "airflow-scheduler")
        scheduler_pid = read_pid(scheduler.pid_path)
        idle_cpu = idle_cpu_share(scheduler_pid, 20.0) if scheduler_pid else None
        for rep in range(reps):  # interleaved: the machine's load drifts alike for every variant
            for variant, name in names.items():
                produce_one(stack.kafka_bootstrap, name, rep + 1)
                epochs[variant].append(timed_run(client, cfg.home, stream_dag_id(name)))
            for lever, (args, env, installed) in submit_levers(archive).items():
                submits.setdefault(lever, []).append(
                    spark_submit_floor(args, env, installed_pyspark=installed)
                )
    chosen_epoch = {
        v: sorted(runs, key=lambda r: float(r["total_s"]))[len(runs) // 2] for v, runs in epochs.items()
    }
    floor_dag = min(floors, key=lambda f: float(f["total_s"]))
    submit_floor = {v: min(runs, key=lambda r: r["wall_s"]) for v, runs in submits.items()}
    total = float(chosen_epoch["default"]["total_s"])
    session = float(chosen_epoch["session"]["total_s"])
    floor_s = float(floor_dag["total_s"]) + submit_floor["all"]["wall_s"]
    return {
        "epoch_overhead_s": total,
        "epoch_overhead_parts": chosen_epoch["default"]["parts"],
        "epoch_overhead_target_s": TARGET_S,
        "epoch_overhead_target_met": total <= TARGET_S,
        "epoch_overhead_runs_s": {v: [r["total_s"] for r in runs] for v, runs in epochs.items()},
        "epoch_overhead_tuned_s": chosen_epoch["tuned"]["total_s"],
        "epoch_overhead_tuned_parts": chosen_epoch["tuned"]["parts"],
        "epoch_overhead_spark_defaults_s": chosen_epoch["spark_defaults"]["total_s"],
        "epoch_overhead_spark_defaults_parts": chosen_epoch["spark_defaults"]["parts"],
        "epoch_overhead_session_s": chosen_epoch["session"]["total_s"],
        "epoch_overhead_session_parts": chosen_epoch["session"]["parts"],
        "epoch_overhead_session_target_s": SESSION_TARGET_S,
        "epoch_overhead_session_target_met": session <= SESSION_TARGET_S,
        "epoch_overhead_warmup_s": warmups,
        "floor_dag_4_noop_tasks_s": floor_dag["total_s"],
        "floor_dag_parts": floor_dag["parts"],
        "floor_spark_submit_empty_s": submit_floor["all"]["wall_s"],
        "floor_spark_submit_levers": submit_floor,
        "floor_s": round(floor_s, 3),
        "ratio_overhead_vs_floor": round(total / floor_s, 3),
        "ratio_overhead_vs_floor_dag": round(total / float(floor_dag["total_s"]), 3),
        "ratio_session_vs_floor_dag": round(session / float(floor_dag["total_s"]), 3),
        "ratio_session_vs_submit": round(session / total, 3),
        "spark_sections": {v: spark_section(v, archive) for v in VARIANTS},
        "airflow_settings": dict(chosen),
        "scheduler_idle_cpu_share": idle_cpu,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", default="/tmp/eo-stack")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--settings", choices=("low-latency", "default"), default="low-latency")
    args = parser.parse_args()
    stack = LocalStack(args.state_dir)
    if not stack.is_up():
        stack.up()
    settings = EPOCH_SETTINGS if args.settings == "low-latency" else {}
    print(json.dumps(run(stack, quick=args.quick, settings=settings), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
