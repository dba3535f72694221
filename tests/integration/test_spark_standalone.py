"""The write step on a real Spark standalone cluster: the stack's master and 2 workers.

One epoch of 300 records over 3 partitions, reserved by ``ReserveEpochOperator`` and
written by ``WriteEpochOperator`` in client deploy mode. The pipeline's ``spark.master``
points at the cluster while the ``spark_default`` connection says ``local[*]`` (the YAML
wins). Executors run the stack's executor Python, which cannot import the provider from
the venv, so the tasks can only succeed with the package zip the operator ships as
``--py-files``. Checked: exact HBase cells, the epoch WRITTEN with its exact counts, the
application FINISHED on the master, and its tasks run by executors on both workers
(their logs in each worker's work dir). The cluster is started once for this module.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import happybase
import pytest
import yaml

from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.ledger import EpochState, Ledger
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from airflow_provider_eo.operators.write import WriteEpochOperator
from eo_devtools.stack.spark_services import master_json, worker_name
from eo_devtools.stack.stack import LocalStack
from tests.conftest import StackInfo
from tests.kafka_helpers import created_topic, produce
from tests.task_context import task_context

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
PER_PARTITION = 100
SPLIT_SIZE = 50  # 2 tasks per partition: 6 tasks
RUNNING_TASK = re.compile(r"Executor: Running task \d+\.\d+ in stage \d+\.\d+ \(TID \d+\)")


def records(partition: int) -> list[tuple[str, bytes]]:
    """Every key written twice per partition (the second value wins), 3 fields each."""
    keys = [f"p{partition}-k{i}" for i in range(PER_PARTITION // 2)]
    first = [(k, json.dumps({"n": i, "part": partition, "round": 1}).encode()) for i, k in enumerate(keys)]
    second = [
        (k, json.dumps({"n": i * 10, "part": partition, "round": 2}).encode()) for i, k in enumerate(keys)
    ]
    return first + second


EXPECTED = {
    f"p{p}-k{i}".encode(): {b"d:n": str(i * 10).encode(), b"d:part": str(p).encode(), b"d:round": b"2"}
    for p in range(PARTITIONS)
    for i in range(PER_PARTITION // 2)
}


@dataclass(frozen=True)
class Cluster:
    master_url: str
    webui_port: int
    work_dirs: list[Path]
    executor_python: Path


@pytest.fixture(scope="module")
def cluster(stack: StackInfo) -> Iterator[Cluster]:
    """The stack's Spark cluster with 2 workers, stopped afterwards unless it was already running."""
    local = LocalStack(stack.state_dir)
    ours = local.spark_workers == 0
    status = local.spark_up(workers=2)
    try:
        master = status["spark-master"]
        assert (master["healthy"], master["workers_alive"]) == (True, 2)
        work_dirs = [Path(status[worker_name(i)]["work_dir"]) for i in (1, 2)]
        yield Cluster(
            master["url"], master["ports"]["spark-master-webui"], work_dirs, local.spark_executor_python
        )
    finally:
        if ours:
            local.spark_down()


def test_an_epoch_runs_on_both_workers_and_writes_exact_cells(
    stack: StackInfo, cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)  # spark_default: local[*]; the pipeline overrides it
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    probe = subprocess.run(
        [str(cluster.executor_python), "-c", "import airflow_provider_eo"],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # like an executor: its work dir, not the repository
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert "No module named 'airflow_provider_eo'" in probe.stderr  # only the shipped zip can provide it

    name = f"standalone_{uuid.uuid4().hex[:8]}"
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(name, {"d": {"max_versions": 1}})
    try:
        with created_topic(stack.kafka_bootstrap, partitions=PARTITIONS, prefix="standalone") as topic:
            for p in range(PARTITIONS):
                produce(stack.kafka_bootstrap, topic, records(p), partition=p)
            pipelines_file = tmp_path / "pipelines.yaml"
            spark = {
                "master": cluster.master_url,
                "resources": {"num_executors": 2, "executor_memory": "512m", "driver_memory": "512m"},
                "split_size": SPLIT_SIZE,
                "conf": {
                    "spark.pyspark.python": str(cluster.executor_python),
                    "spark.pyspark.driver.python": sys.executable,
                    # schedule only once both executors are there, so both get tasks
                    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                    "spark.scheduler.maxRegisteredResourcesWaitingTime": "300s",
                    "spark.driver.host": "127.0.0.1",  # the driver on loopback too
                },
            }
            entry = {"name": name, "topics": [topic], "hbase": {"table": name}, "spark": spark}
            pipelines_file.write_text(yaml.safe_dump({"pipelines": [entry]}))

            reserve = ReserveEpochOperator(
                task_id="reserve", pipeline=name, pipelines_file=str(pipelines_file)
            )
            summary = reserve.execute(task_context())  # type: ignore[arg-type]
            assert summary["records_total"] == PARTITIONS * PER_PARTITION
            write = WriteEpochOperator(
                task_id="write",
                pipeline=name,
                epoch_id=summary["epoch_id"],
                fencing_token=summary["fencing_token"],
                spec=load_pipeline(name, pipelines_file),
                pipelines_file=str(pipelines_file),
            )
            write.execute(task_context())

            hbase.close()  # Thrift drops a connection idle for 60 s: the write may take longer
            hbase.open()
            scanned = dict(hbase.table(name).scan())
    finally:
        hbase.delete_table(name, disable=True)
        hbase.close()
    assert scanned == EXPECTED

    with Ledger(stack.ledger_dsn) as ledger:
        epoch = ledger.get_epoch(summary["epoch_id"])
        voted = ledger.history(summary["epoch_id"])[1:]
    # the driver voted as the write task: WriteEpochOperator handed it its task instance
    assert [(t.from_state, t.to_state, t.actor_kind, t.actor) for t in voted] == [
        ("RESERVED", "WRITTEN", "task", "eo_stream/run-1/t try 1")
    ]
    metrics = epoch.metrics or {}
    assert (epoch.state, metrics["records"], metrics["cells_written"], metrics["tasks"]) == (
        EpochState.WRITTEN,
        PARTITIONS * PER_PARTITION,
        PARTITIONS * PER_PARTITION * 3,
        PARTITIONS * PER_PARTITION // SPLIT_SIZE,
    )

    apps = [
        a
        for a in (master_json(cluster.webui_port) or {}).get("completedapps", [])
        if a["name"] == f"eo-write-{name}-epoch-{summary['epoch_id']}"
    ]
    assert [a["state"] for a in apps] == ["FINISHED"]
    tasks_per_worker = []
    for work_dir in cluster.work_dirs:
        executor_logs = sorted((work_dir / apps[0]["id"]).glob("*/stderr"))
        assert len(executor_logs) == 1  # one 1-core executor per worker
        assert (executor_logs[0].parent / "airflow_provider_eo.zip").is_file()  # fetched from the driver
        tasks_per_worker.append(len(RUNNING_TASK.findall(executor_logs[0].read_text(errors="replace"))))
    assert min(tasks_per_worker) >= 1
    assert sum(tasks_per_worker) == metrics["spark_task_count"] == metrics["tasks"]  # one range a task
