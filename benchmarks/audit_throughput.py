"""The audit against the write step on the same records: records/s and peak memory.

The write step writes the dataset once (spark-submit, ``local[2]``, as the ``write``
section runs it: one backfill epoch over every partition into a fresh table); the epoch is
committed. Then, first, the issue's audit: the audit DAG's path (``audit_spark``):
``spark-submit`` of the audit application (``spark/driver/audit_application.py``, the same
``local[2]`` master and settings as the write step, the ranges as Spark tasks), storing its
report in the ledger under a run key of its own; measured like the write step
(:func:`~benchmarks.spark_submit_run.measured_submit`: wall time, peak RSS of the process
tree, client CPU), with the load average before and after (the machine is shared: the
ratio is only as good as the quiet it ran in). It must be stored ``clean`` with every
record written, or the section fails (a wrong audit is no figure).

Beside it, the in-process path: ``eo-ledger audit --epochs E-E`` as a user runs it (a
process of its own, the stack's ``AIRFLOW_CONN_*`` variables), measured the same way
(:class:`~benchmarks.process_meter.ProcessMeter`) and required ``clean``; then the same
audit again with a quarter of the index bytes it took as its ``--index-budget-bytes``: its
rows are audited in buckets, one pass each, with the same (clean) answer: what the memory
bound costs (``audit_quarter_index_budget``).

Targets (issue 36): the Spark path's ``ratio_spark_records_per_s`` >= 0.8 and
``ratio_spark_peak_rss`` <= 1.2; the in-process path's ``ratio_records_per_s`` and
``ratio_peak_rss`` against the same bounds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow_provider_eo.config import load_pipelines
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.protocol import EpochProtocol
from airflow_provider_eo.operators.driver_start import submission_conf
from benchmarks.dataset import Dataset
from benchmarks.process_meter import ProcessMeter
from benchmarks.spark_submit_run import measured_submit
from benchmarks.write_step import drop_table, run_write_step
from eo_devtools.stack.stack import LocalStack


def run(stack: LocalStack, dataset: Dataset) -> dict[str, Any]:
    """``{"records", "partitions", "write_step", "audit_spark", "ratio_spark_records_per_s",
    "ratio_spark_peak_rss", "audit", "ratio_records_per_s", "ratio_peak_rss",
    "audit_quarter_index_budget", "bound"}`` (``bound``: what limits each path's rate)."""
    step = run_write_step(stack, dataset, label="audit_write", keep_table=True)
    try:
        with tempfile.TemporaryDirectory(prefix="eo-bench-audit-") as folder:
            pipelines = Path(folder) / "pipelines.yaml"
            pipelines.write_text(step["pipelines_yaml"])
            _commit(stack, pipelines, step["pipeline"], step["epoch_id"])
            spark = _measured_spark_audit(stack, pipelines, step["pipeline"], step["epoch_id"], dataset)
            audit = _measured_audit(stack, pipelines, step["pipeline"], step["epoch_id"], dataset.records)
            budget = max(1, audit["index"].get("peak_bytes", 0) // 4)  # the index must be cut in buckets
            bucketed = _measured_audit(
                stack, pipelines, step["pipeline"], step["epoch_id"], dataset.records, budget
            )
    finally:
        drop_table(stack, step["table"])
    write = {key: step[key] for key in ("wall_s", "records_per_s", "peak_rss_mb", "client_cpu_s_per_million")}
    busy = audit["cpu_s_per_million"] * dataset.records / 1e6 / audit["wall_s"]
    return {
        "records": dataset.records,
        "partitions": len(dataset.ends),
        "write_step": write,
        "audit_spark": spark,
        "ratio_spark_records_per_s": round(spark["records_per_s"] / write["records_per_s"], 2),
        "ratio_spark_peak_rss": round(spark["peak_rss_mb"] / write["peak_rss_mb"], 2),
        "audit": audit,
        "ratio_records_per_s": round(audit["records_per_s"] / write["records_per_s"], 2),
        "ratio_peak_rss": round(audit["peak_rss_mb"] / write["peak_rss_mb"], 2),
        "audit_quarter_index_budget": bucketed,
        "bound": (
            f"the Spark audit: {spark.get('client_cpu_s_per_million')} client CPU s per million records "
            f"over local[2] (the write step's {write['client_cpu_s_per_million']}); the in-process "
            f"audit runs in one Python process: {audit['cpu_s_per_million']} CPU s per million "
            f"records, {busy:.2f} cores busy"
        ),
    }


@contextmanager
def _stack_connections(stack: LocalStack) -> Iterator[dict[str, str]]:
    """This process's environment with the stack's ``AIRFLOW_CONN_*`` set, restored after."""
    before = dict(os.environ)
    os.environ.update(stack.conn_env())
    try:
        yield dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(before)


def _commit(stack: LocalStack, pipelines: Path, pipeline: str, epoch_id: int) -> None:
    """Commit the written backfill epoch (the audit audits committed epochs only)."""
    spec = load_pipelines(pipelines)[pipeline]
    with _stack_connections(stack), Ledger(stack.ledger_dsn) as ledger:
        kafka = EoKafkaHook()
        EpochProtocol(ledger, kafka=lambda: kafka).commit(epoch_id, pipeline=spec)


def _measured_audit(
    stack: LocalStack, pipelines: Path, pipeline: str, epoch_id: int, records: int, budget: int | None = None
) -> dict[str, Any]:
    """``eo-ledger audit`` of the one epoch (with ``--index-budget-bytes budget`` when given),
    measured; RuntimeError unless it is clean with every record written."""
    argv = [
        sys.executable, "-m", "airflow_provider_eo.cli.eo_ledger", "audit", "--pipeline", pipeline,
        "--epochs", f"{epoch_id}-{epoch_id}", "--pipelines-file", str(pipelines), "--no-record",
        *([] if budget is None else ["--index-budget-bytes", str(budget)]),
    ]  # fmt: skip
    with _stack_connections(stack) as env, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        meter = ProcessMeter(process.pid).start()
        code = process.wait()
        meter.stop()
        wall = time.monotonic() - started
        out.seek(0)
        err.seek(max(0, err.seek(0, 2) - 4000))
        answer_text, tail = out.read().decode(), err.read().decode("utf-8", "replace")
    try:
        answer = json.loads(answer_text)
    except json.JSONDecodeError:
        raise RuntimeError(f"audit: exit {code}, no answer:\n{tail}") from None
    written = answer["offsets"]["records_written"]
    if (code, answer["verdict"], written) != (0, "clean", records):
        shown = json.dumps(answer["findings"][:5])
        raise RuntimeError(f"audit: exit {code} {answer['verdict']} written={written} of {records}: {shown}")
    return {
        "wall_s": round(wall, 2),
        "records_per_s": round(records / wall),
        "peak_rss_mb": round(meter.peak_rss_bytes / 2**20, 1),
        "cpu_s_per_million": round(meter.cpu_seconds / records * 1e6, 1),
        "verdict": answer["verdict"],
        "cells": answer["cells"],
        "hbase_calls": answer["hbase_calls"],
        "index": answer.get("index", {}),  # budget, buckets, passes, peak estimated bytes
    }


def _measured_spark_audit(
    stack: LocalStack, pipelines: Path, pipeline: str, epoch_id: int, dataset: Dataset
) -> dict[str, Any]:
    """The audit application through spark-submit (``local[2]``, the write step's settings),
    measured; RuntimeError unless its stored audit is clean with every record written."""
    import airflow_provider_eo.spark.driver.audit_application as audit_app

    run_key = f"bench/audit-spark-{epoch_id}-{int(time.time())}"
    app_args = [str(audit_app.__file__), "--pipeline", pipeline, "--epoch-ids", str(epoch_id)]
    app_args += ["--run-key", run_key, "--pipelines-file", str(pipelines)]
    load_before = os.getloadavg()
    with submission_conf({}, master="local[2]", deploy_mode="client") as submitted:
        argv = ["--master", "local[2]"]
        for key, value in submitted.items():
            argv += ["--conf", f"{key}={value}"]
        run = measured_submit(stack, argv + app_args, "audit_spark")
    load_after = os.getloadavg()
    with Ledger(stack.ledger_dsn) as ledger:
        record = ledger.audit_of_run(run_key)
    if record is None:
        raise RuntimeError(f"audit_spark: no audit stored under {run_key}")
    written = record.summary["offsets"]["records_written"]
    if (record.verdict, written) != ("clean", dataset.records):
        raise RuntimeError(f"audit_spark: {record.verdict} written={written} of {dataset.records}")
    figures = run.figures(dataset.records, dataset.megabytes)
    return {
        **{
            key: figures[key]
            for key in ("wall_s", "records_per_s", "peak_rss_mb", "client_cpu_s_per_million")
            if key in figures
        },
        "verdict": record.verdict,
        "cells": record.summary["cells"],
        "hbase_calls": record.summary["hbase_calls"],
        "index": record.summary.get("index", {}),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
    }
