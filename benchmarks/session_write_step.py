"""One run of the write step in session mode, measured like a ``spark-submit`` run.

:func:`measured_session_write` writes a reserved epoch the way the write operator's session
mode does (:class:`airflow_provider_eo.operators.session_write.SessionWrite`: the
``spark_connect`` connection, the pipeline's shared server-side session, the epoch's tasks as
one job, the vote from this process), here with this process as the Airflow task. The clock
runs from opening the session to closing it. The process meter follows the Connect server's
tree (its JVM, which holds the local executors, and its Python workers); this process's own CPU
counts as ``driver_python``, the submit mode's driver. Peak RSS is the server tree's (this
process's client is not counted, as the Airflow task of submit mode is not).

:func:`connect_server` starts the stack's Connect server when it does not run and says how
long that took: a one-time start, kept out of every throughput figure.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import psutil

from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.operators.session_write import SessionWrite
from benchmarks.cpu_components import ServerMeter, spark_process_kind
from benchmarks.process_meter import ProcessMeter
from benchmarks.scratch_resources import kafka_connection
from benchmarks.spark_submit_run import SubmitRun
from eo_devtools.stack.spark_connect import DRIVER_MEMORY, LOCAL_MASTER, PORT_KEY
from eo_devtools.stack.stack import LocalStack

CONN_IDS = {
    "ledger_conn_id": "eo_ledger",
    "kafka_conn_id": "eo_kafka",
    "hbase_conn_id": "eo_hbase",
    "schema_registry_conn_id": "schema_registry",
}
"""The write operator's default connection ids (the ones the stack defines)."""


def connect_server_pid(stack: LocalStack) -> int:
    """The running Connect server's process id (its JVM); RuntimeError when it does not run."""
    pid = stack.status().get("spark-connect", {}).get("pid")
    if not pid:
        raise RuntimeError("the stack's Spark Connect server does not run (eo-stack up --spark-connect)")
    return int(pid)


def connect_server(stack: LocalStack) -> dict[str, Any]:
    """Start the stack's Connect server unless it runs: ``{"start_s", "started_here", "master",
    "driver_memory", "port"}`` (``start_s`` None when it already ran: not measured)."""
    started_here = stack.spark_connect_port is None
    began = time.monotonic()
    port = stack.spark_connect_up()
    start_s = round(time.monotonic() - began, 1) if started_here else None
    return {
        "start_s": start_s,
        "started_here": started_here,
        "master": LOCAL_MASTER,
        "driver_memory": DRIVER_MEMORY,
        "port": port,
        "port_key": PORT_KEY,
    }


def measured_session_write(
    stack: LocalStack, pipelines_file: Path, pipeline: str, epoch_id: int, label: str
) -> SubmitRun:
    """Write and vote ``epoch_id`` of ``pipeline`` (declared in ``pipelines_file`` with
    ``spark.mode: session``) on the stack's Connect server; raises RuntimeError when the
    write does not end voted."""
    spec = load_pipeline(pipeline, pipelines_file)
    servers = ServerMeter(stack)
    meter = ProcessMeter(connect_server_pid(stack), kind_of=spark_process_kind, since_start=True).start()
    me = psutil.Process(os.getpid())
    cpu_before = sum(me.cpu_times()[:2])
    started = time.monotonic()
    try:
        with kafka_connection(stack):  # the stack's AIRFLOW_CONN_* (the task's connections)
            env = {name: value for name, value in os.environ.items() if name.startswith("AIRFLOW_CONN_")}
            SessionWrite(spec, epoch_id, None, dict(CONN_IDS)).run(None, env)
    except Exception as exc:
        raise RuntimeError(f"{label}: session write of epoch {epoch_id} failed: {exc}") from exc
    finally:
        wall = time.monotonic() - started
        meter.stop()
    by_kind = meter.cpu_seconds_by_kind
    by_kind["driver_python"] = by_kind.get("driver_python", 0.0) + sum(me.cpu_times()[:2]) - cpu_before
    return SubmitRun(wall, by_kind, servers.seconds(), meter.peak_rss_bytes, [], "")
