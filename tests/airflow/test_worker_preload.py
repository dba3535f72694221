"""The provider's task code preloaded in Airflow's workers (``dags/worker_preload.py``).

A child of a ``forkserver`` that preloads the module starts with the task runner, the
operators and the Spark Connect client imported, so an epoch's task process parses its DAG
and opens a session without importing them again (docs/performance.md, "Task start"). On the
session's real Airflow (``airflow_server``, started with ``TASK_PRELOAD_SETTINGS``) the
LocalExecutor's workers are that forkserver's children, and a run's tasks succeed there.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from airflow_provider_eo.dags.factory import RECOVERY_DAG_ID, stream_dag_id
from eo_devtools.stack.airflow_config import TASK_PRELOAD_SETTINGS
from tests.airflow_server import AirflowServer

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

PRELOAD = "airflow_provider_eo.dags.worker_preload"
TASK_MODULES = (
    "airflow.sdk.execution_time.task_runner",
    "airflow_provider_eo.dags.factory",
    "airflow_provider_eo.operators.reserve",
    "airflow_provider_eo.operators.write",
    "airflow_provider_eo.operators.session_write_operator",
    "airflow_provider_eo.spark.session.session_write",
    "pyspark.sql.connect.session",
)

CHILD_OF_A_PRELOADING_FORKSERVER = f"""
import multiprocessing, sys
def present(names):
    return [name for name in names if name in sys.modules]
if __name__ == "__main__":
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([{PRELOAD!r}])
    with context.Pool(1) as pool:
        print("child:", pool.apply(present, ({list(TASK_MODULES)!r},)))
    print("parent:", [name for name in {list(TASK_MODULES)!r} if name in sys.modules])
"""


def test_a_forkserver_child_starts_with_the_task_code(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD_OF_A_PRELOADING_FORKSERVER)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True
    )
    answers = dict(
        line.split(": ", 1) for line in done.stdout.splitlines() if line.startswith(("child", "parent"))
    )
    assert answers["child"] == repr(list(TASK_MODULES))  # every one imported before the child ran anything
    assert answers["parent"] == "[]"  # the parent itself imported none of them


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process readable in /proc."""
    table: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        table[int(entry.name)] = (parent, cmdline)
    return table


def descendants(table: dict[int, tuple[int, str]], root: int) -> list[int]:
    found: list[int] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, (ppid, _) in table.items() if ppid == parent]
        found.extend(children)
        frontier.extend(children)
    return found


def recovery_tasks(airflow_server: AirflowServer) -> list[str]:
    return [task["task_id"] for task in airflow_server.api("GET", f"dags/{RECOVERY_DAG_ID}/tasks")["tasks"]]


def test_the_schedulers_workers_fork_from_the_preloading_forkserver(airflow_server: AirflowServer) -> None:
    assert TASK_PRELOAD_SETTINGS["AIRFLOW__SCHEDULER__MP_FORKSERVER_PRELOAD"] == PRELOAD
    name = f"preload_{uuid.uuid4().hex[:8]}"  # eo_recovery gets a task: recover__<name>
    airflow_server.add_pipeline({"name": name, "topics": [name], "hbase": {"table": name}})
    airflow_server.wait_for_dag(stream_dag_id(name))
    deadline = time.monotonic() + 120
    while f"recover__{name}" not in recovery_tasks(airflow_server):
        assert time.monotonic() < deadline, "eo_recovery never got the new pipeline's task"
        time.sleep(1)
    run_id = airflow_server.trigger(RECOVERY_DAG_ID)
    assert airflow_server.wait_for_run(RECOVERY_DAG_ID, run_id) == "success"
    states = airflow_server.task_states(RECOVERY_DAG_ID, run_id)
    assert states.get(f"recover__{name}") == "success", states
    (scheduler,) = [s for s in airflow_server.airflow.services if s.name == "airflow-scheduler"]
    table = process_table()
    scheduler_pid = int(scheduler.pid_path.read_text())
    below = descendants(table, scheduler_pid)
    forkservers = [pid for pid in below if "multiprocessing.forkserver" in table[pid][1]]
    assert len(forkservers) == 1, [table[pid][1][:120] for pid in below]
    (forkserver,) = forkservers
    assert PRELOAD in table[forkserver][1]
    workers = [pid for pid in below if table[pid][1].startswith("airflow worker -- LocalExecutor")]
    assert workers and all(table[pid][0] == forkserver for pid in workers)
