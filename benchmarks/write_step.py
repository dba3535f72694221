"""One run of the write step as production runs it: ``spark-submit`` of the write application.

The epoch is a backfill epoch over the dataset's whole ranges, reserved in the stack's
ledger under a pipeline of its own that writes to a fresh HBase table. ``spark-submit``
is the one next to this interpreter (the venv's), so nothing depends on ``PATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import happybase
import yaml

from airflow_provider_eo.ledger import Ledger, PartitionRange
from airflow_provider_eo.spark import app as app_module
from benchmarks.dataset import Dataset
from benchmarks.process_meter import ProcessMeter, cpu_seconds
from eo_devtools.ledger_direct import reserve_backfill_epoch
from eo_devtools.stack.stack import LocalStack

SERVER_SERVICES = ("kafka", "hbase", "hbase-thrift", "postgres")


def server_pids(stack: LocalStack) -> list[int]:
    """Process ids of the stack's Kafka, HBase, Thrift and PostgreSQL servers."""
    status = stack.status()
    return [int(status[name]["pid"]) for name in SERVER_SERVICES if status.get(name, {}).get("pid")]


def fresh_table(stack: LocalStack, prefix: str) -> str:
    """Create an empty table with family ``d``; returns its name."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        connection.create_table(name, {"d": {}})
    finally:
        connection.close()
    return name


def drop_table(stack: LocalStack, name: str) -> None:
    """Disable and delete a benchmark table."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        connection.delete_table(name, disable=True)
    finally:
        connection.close()


def spark_submit_path() -> str:
    """The ``spark-submit`` installed with this interpreter's pyspark."""
    return str(Path(sys.executable).parent / "spark-submit")


def figures(
    records: int, megabytes: float, seconds: float, client_cpu_s: float, server_cpu_s: float
) -> dict[str, Any]:
    """records/s, MB/s and CPU seconds per million records of one run."""
    return {
        "records": records,
        "wall_s": round(seconds, 2),
        "records_per_s": round(records / seconds),
        "mb_per_s": round(megabytes / seconds, 2),
        "client_cpu_s_per_million": round(client_cpu_s * 1e6 / records, 1),
        "server_cpu_s_per_million": round(server_cpu_s * 1e6 / records, 1),
    }


def pipelines_yaml(
    pipeline: str,
    topic: str,
    table: str,
    *,
    batch_size: int,
    batch_bytes: int | None,
    split_size: int,
    mapping: Mapping[str, str] | None,
) -> str:
    """The pipelines file of one benchmark pipeline (every other setting the default)."""
    entry: dict[str, Any] = {
        "name": pipeline,
        "topics": [topic],
        "hbase": {"table": table},
        "batch_size": batch_size,
    }
    if batch_bytes is not None:
        entry["batch_bytes"] = batch_bytes
    if mapping:
        entry["mapping"] = dict(mapping)
    entry["spark"] = {"split_size": split_size}
    return yaml.safe_dump({"pipelines": [entry]}, sort_keys=False)


def run_write_step(
    stack: LocalStack,
    dataset: Dataset,
    *,
    master: str = "local[2]",
    conf: dict[str, str] | None = None,
    label: str = "write_step",
    batch_size: int = 1000,
    batch_bytes: int | None = None,
    split_size: int = 125_000,
    keep_table: bool = False,
    mapping: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write the dataset once with spark-submit; raises RuntimeError when the application fails.

    ``mapping``: the pipeline's ``mapping:`` settings (e.g. ``{"value_format": "avro"}``;
    default: the default JSON mapping). Returns :func:`figures` (wall time from
    spark-submit's start to its exit) plus ``tasks_records_per_s`` (the vote's ``duration_s``:
    Spark tasks only), ``peak_rss_mb`` (driver JVM + Python workers), ``table``, and the epoch's
    ``cells_written`` and ``bad_records`` (and ``schema_fetches`` when the epoch reports it).
    """
    table = fresh_table(stack, f"bench_{label}")
    pipeline = f"bench_{label}_{uuid.uuid4().hex[:6]}"
    workdir = tempfile.TemporaryDirectory(prefix="eo-bench-")  # the pipelines file, removed at the end
    pipelines = Path(workdir.name) / "pipelines.yaml"
    pipelines.write_text(
        pipelines_yaml(
            pipeline,
            dataset.topic,
            table,
            batch_size=batch_size,
            batch_bytes=batch_bytes,
            split_size=split_size,
            mapping=mapping,
        )
    )
    with Ledger(stack.ledger_dsn) as ledger:
        ranges = [PartitionRange(dataset.topic, p, 0, end) for p, end in enumerate(dataset.ends)]
        epoch_id = reserve_backfill_epoch(
            ledger, pipeline, ranges, dag_id="bench", run_id=uuid.uuid4().hex
        ).epoch_id
    argv = [spark_submit_path(), "--master", master, "--conf", "spark.ui.enabled=false"]
    for key, value in (conf or {}).items():
        argv += ["--conf", f"{key}={value}"]
    argv += [
        str(app_module.__file__),
        "--pipeline",
        pipeline,
        "--epoch-id",
        str(epoch_id),
        "--pipelines-file",
        str(pipelines),
    ]
    env = {
        **os.environ,
        **stack.conn_env(),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    # spark-submit looks for SPARK_HOME through the python on PATH: the venv's first
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    servers = server_pids(stack)
    server_before = cpu_seconds(servers)
    started = time.monotonic()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(argv, env=env, stdout=output, stderr=subprocess.STDOUT)
        meter = ProcessMeter(process.pid).start()
        code = process.wait()
        meter.stop()
        wall = time.monotonic() - started
        output.seek(0)
        log_tail = output.read()[-4000:].decode("utf-8", "replace")
    server_cpu = cpu_seconds(servers) - server_before
    if code != 0:
        raise RuntimeError(f"{label}: spark-submit exited {code}:\n{log_tail}")
    with Ledger(stack.ledger_dsn) as ledger:
        metrics = ledger.get_epoch(epoch_id).metrics or {}
    if metrics.get("records") != dataset.records:
        raise RuntimeError(
            f"{label}: epoch {epoch_id} voted {metrics.get('records')} records, expected {dataset.records}"
        )
    result = figures(dataset.records, dataset.megabytes, wall, meter.cpu_seconds, server_cpu)
    result["tasks_records_per_s"] = round(dataset.records / float(metrics["duration_s"]))
    result["peak_rss_mb"] = round(meter.peak_rss_bytes / 2**20, 1)
    result["table"] = table
    result["cells_written"] = metrics.get("cells_written")
    result["bad_records"] = metrics.get("bad_records")
    if "schema_fetches" in metrics:
        result["schema_fetches"] = metrics["schema_fetches"]
    if not keep_table:
        drop_table(stack, table)
    workdir.cleanup()
    return result
