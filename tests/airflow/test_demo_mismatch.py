"""The demo's promise to a user: it exits 1, naming what is wrong, when HBase does not hold
what the topic's records make (README: "Exits 1 on any mismatch or failed run").

On the session's stack and Airflow, the demo runs its JSON pipeline once (exit 0); then one
cell of its table is overwritten by hand at a version newer than any record's (what a stray
writer outside the provider would leave), and the demo runs again with a few more events.
The second run's stream and backfill DAG runs succeed, so the exit code comes from the
checks alone: exit 1, ``CHECKS FAILED``, the report naming the table and the row, and the
closing audit finding the cell no record maps to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import happybase
import pytest
import yaml

from eo_devtools.demo.sample_events import sample_events
from tests.airflow.test_demo import _renamed, _report
from tests.airflow_server import AirflowServer
from tests.conftest import StackInfo

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
FIRST_EVENTS = 60
SECOND_EVENTS = 10
STRAY_VERSION = 10**15  # newer than any offset-derived version: the stray cell stays visible


def _run_demo(
    stack: StackInfo, airflow_server: AirflowServer, pipeline: str, events: int
) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable, "-m", "eo_devtools.demo",
        "--state-dir", str(stack.state_dir),
        "--airflow-home", str(airflow_server.home),
        "--dags-folder", str(airflow_server.dags_folder),
        "--pipeline", pipeline,
        "--avro-pipeline", "absent_avro_pipeline",  # the Avro and CDC parts are off
        "--cdc-pipeline", "absent_cdc_pipeline",
        "--events", str(events),
        "--partitions", "2",
        "--max-runs", "2",
    ]  # fmt: skip
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, env=dict(os.environ)
    )


def test_a_stray_cell_makes_the_demo_exit_1_naming_it(
    stack: StackInfo, airflow_server: AirflowServer
) -> None:
    entry: dict[str, Any] = _renamed(
        yaml.safe_load((REPO / "dags" / "pipelines.yaml").read_text())["pipelines"][0], uuid.uuid4().hex[:8]
    )
    airflow_server.add_pipeline(entry)
    first = _run_demo(stack, airflow_server, entry["name"], FIRST_EVENTS)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    assert _report(first.stdout)["ok"] is True

    table_name = entry["hbase"]["table"]
    second_keys = {key for key, _ in sample_events(SECOND_EVENTS)}
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        table = hbase.table(table_name)
        row, cells = next((r, c) for r, c in table.scan() if r not in second_keys)
        column = sorted(cells)[0]
        table.put(row, {column: b"written by hand"}, timestamp=STRAY_VERSION)
    finally:
        hbase.close()

    second = _run_demo(stack, airflow_server, entry["name"], SECOND_EVENTS)
    assert second.returncode == 1, second.stdout[-4000:] + second.stderr[-4000:]
    assert "demo: CHECKS FAILED" in second.stdout
    report = _report(second.stdout)
    (pipeline,) = report["pipelines"]
    assert (report["ok"], pipeline["ok"], pipeline.get("failure"), pipeline["stream_runs"]) == (
        False,
        False,
        None,
        1,
    )
    wrong, detail = pipeline["problems"]
    assert wrong == f"HBase {table_name}: 1 wrong cells in rows, e.g. [{row!r}]"
    assert detail.startswith(f"row {row!r}: expected ")
    assert f"{column!r}: {b'written by hand'!r}" in detail.split(", got ", 1)[1]
    assert (pipeline["audit"]["verdict"], pipeline["audit"]["discrepancies"]) != ("clean", 0)
    print(json.dumps(pipeline["audit"]))
