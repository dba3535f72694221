"""Writes in YARN cluster deploy mode on the fault stack (the suite's YARN kinds and tests).

:func:`yarn_running` starts the fault stack's YARN (Hadoop's ResourceManager and one
NodeManager, ``LocalStack.yarn_up``) unless it runs; :func:`yarn_case` declares a case
whose pipeline writes with ``spark.master: yarn`` and ``deploy_mode: cluster`` (the venv's
Python in the containers, the worktree on their ``PYTHONPATH`` after the fault points'
``points_site``). :func:`start_yarn_write` runs ``WriteEpochOperator`` in a child process
(``tests.faults.steps write``), the Airflow side of the write: spark-submit returns once
YARN accepted the application and the step then follows it through the ResourceManager,
so a SIGKILL of that process tree leaves the driver running in YARN (no ``on_kill``).

Fault points reach the containers through ``spark.yarn.appMasterEnv.*`` and
``spark.executorEnv.*`` (:func:`points_conf`): ``spark.after_last_batch:hang`` holds the
driver before its vote, ``spark.task.after_segment:hang`` holds the tasks after their first
HBase segment; each announces itself in its container's log
(:meth:`~tests.faults.yarn_apps.YarnApps.wait_for_log`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from eo_devtools.stack.yarn_spark import yarn_spark_conf, yarn_submit_env
from tests.faults.crash_points import FAULT_HANG_ENV, FAULT_POINTS_ENV, FAULT_RELEASE_ENV, POINTS_SITE, REPO
from tests.faults.harness import Case, FaultStack, StepProc, new_case

#: The Spark connection of the stack's YARN (``eo-stack env``'s ``spark_yarn``).
YARN_CONN_ID = "spark_yarn"
#: What the containers' Python finds first: the fault points' ``sitecustomize``, the worktree.
CONTAINER_PYTHONPATH = os.pathsep.join((str(POINTS_SITE), str(REPO)))


def yarn_running(stack: FaultStack) -> None:
    """Start the stack's YARN unless its RM runs, and refresh ``stack.conn_env`` with the
    ``spark_yarn`` connection (``LocalStack.conn_env`` adds it while YARN is recorded)."""
    if not stack.local.yarn_client_env():
        stack.local.yarn_up()
    stack.conn_env = {
        **stack.local.conn_env(),
        "AIRFLOW_CONN_EO_KAFKA": stack.conn_env["AIRFLOW_CONN_EO_KAFKA"],
    }


def cluster_spark(stack: FaultStack, **conf: str) -> dict[str, Any]:
    """A pipeline's ``spark`` section for the stack's YARN in cluster deploy mode: the venv's
    Python (it has the third-party packages; the worktree comes first on ``PYTHONPATH``),
    package ``installed`` (nothing shipped), one split per partition's range."""
    python = sys.executable
    settings = {
        **yarn_spark_conf(stack.state_dir),
        "spark.pyspark.python": python,
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
        "spark.executorEnv.PYSPARK_PYTHON": python,
        "spark.yarn.appMasterEnv.PYTHONPATH": CONTAINER_PYTHONPATH,
        "spark.executorEnv.PYTHONPATH": CONTAINER_PYTHONPATH,
        **conf,
    }
    return {
        "master": "yarn",
        "deploy_mode": "cluster",
        "package": "installed",
        "split_size": 1000,
        "conf": settings,
    }


def yarn_case(stack: FaultStack, workdir: Path, tag: str, **options: Any) -> Case:
    """:func:`~tests.faults.harness.new_case` writing in YARN cluster deploy mode
    (``max_app_attempts``: the pipeline's ``spark.yarn.maxAppAttempts``, unset by default
    so the provider's pin of 1 applies)."""
    attempts = options.pop("max_app_attempts", None)
    conf = {"spark.yarn.maxAppAttempts": str(attempts)} if attempts is not None else {}
    case = new_case(stack, workdir, tag, spark=cluster_spark(stack, **conf), **options)
    case.writer = yarn_write
    return case


def points_conf(points: str, release: Path, hang_s: float = 600) -> dict[str, str]:
    """``spark.conf`` entries that arm ``points`` (``EO_FAULT_POINTS``) in the driver's and the
    executors' containers, a hang lasting until ``release`` exists (``hang_s`` at most)."""
    env = {FAULT_POINTS_ENV: points, FAULT_HANG_ENV: str(hang_s), FAULT_RELEASE_ENV: str(release)}
    return {
        f"{prefix}{name}": value
        for prefix in ("spark.yarn.appMasterEnv.", "spark.executorEnv.")
        for name, value in env.items()
    }


def start_yarn_write(
    case: Case, epoch_id: int, token: str, run_id: str, spark_conf: dict[str, str] | None = None
) -> StepProc:
    """``WriteEpochOperator`` for ``epoch_id`` under ``token`` in a child process (own session),
    submitting to the stack's YARN with ``spark_conf`` added; returns at once."""
    argv = [sys.executable, "-m", "tests.faults.steps", "write", "--pipeline", case.name]
    argv += ["--pipelines-file", str(case.pipelines_file), "--dag-id", case.dag_id, "--run-id", run_id]
    argv += ["--epoch-id", str(epoch_id), "--fencing-token", token, "--spark-conn-id", YARN_CONN_ID]
    argv += ["--spark-conf", json.dumps(spark_conf or {})]
    log_path = case.workdir / f"yarn-write-{epoch_id}-{uuid.uuid4().hex[:6]}.log"
    venv_bin = str(Path(sys.executable).parent)
    env = case.env(
        **yarn_submit_env(case.stack.state_dir), PATH=f"{venv_bin}{os.pathsep}{os.environ['PATH']}"
    )
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    return StepProc(proc, log_path)


def yarn_write(case: Case, epoch_id: int, token: str, run_id: str, timeout: float = 600) -> int:
    """:func:`start_yarn_write` without faults, waited for; the step's exit status."""
    return start_yarn_write(case, epoch_id, token, run_id).result(timeout).returncode
