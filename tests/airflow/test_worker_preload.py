"""The provider's task code preloaded in Airflow's workers (``dags/worker_preload.py``).

A child of a ``forkserver`` that preloads the module starts with the task runner, the
operators and the Spark Connect client imported, so an epoch's task process parses its DAG
and opens a session without importing them again (docs/performance.md, "Task start": measured,
not adopted by the stack's and the tests' Airflow).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
