"""Faults under a real scheduler (LocalExecutor) that Airflow recovers from by itself.

The cases run on the suite's shared cluster stack (``cluster_stack``:
tests/faults/cluster_topology.py) with one Airflow metadata database and DAG folder for
the task-tree and scheduler kills (``pg_airflow``); each case starts its own scheduler
(two of them kill it). The normal suite runs the task-tree kill (``task``) and the
scheduler kill with its session (``killed``: what ``eo-stack up`` and a service manager do).
Long mode adds the tree kill with its LocalExecutor worker (``worker``: the
heartbeat-timeout path, which the zombie case of test_airflow_faults.py, row 17, runs in
every CI run), the scheduler kill with its workers left running (``live-on``: the setup
docs/scale.md advises against; its tries depend on timing, a third write try on a loaded
machine) and the kill-to-commit figures (Airflow's defaults wait out a 300 s heartbeat
timeout).

Nobody aborts, clears or marks anything: the run succeeds through Airflow's own retries,
its heartbeat timeout and its adoption of a dead scheduler's tasks, and the harness checks
the exact HBase cells, ledger rows and group offsets (:meth:`Case.verify`).

* a running write task's process tree SIGKILLed: the task process with its spark-submit
  (the supervisor, a LocalExecutor worker, sees it die and fails the try), or the worker
  too (nothing reports: the heartbeat timeout fails the try);
* the scheduler SIGKILLed while an epoch's write runs, then restarted: its successor resets
  the tasks the dead one ran once its heartbeat is old (``orphaned_tasks_check_interval``),
  with the dead scheduler's workers left running or killed with its session (what
  ``eo-stack up`` and a service manager do);
* the time from a write task's kill to its epoch committed, with Airflow's defaults and
  with the settings docs/scale.md recommends (:data:`RECOVERY_SETTINGS`, the factory's
  retry delays): printed, and in the report row; no assertion on it.

The write is held at the ``spark.task.after_segment`` fault point while the fault
strikes, and released once the retry is under way.
"""

from __future__ import annotations

import datetime
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochState
from eo_devtools.stack.airflow_config import RECOVERY_SETTINGS
from tests.faults.airflow_services import (
    ADOPTION_SETTINGS,
    HANG,
    AirflowServices,
    PostgresAirflow,
    alive,
    assert_write_retried_once,
    kill_tree,
    parent_pid,
    wait_until,
)
from tests.faults.crash_points import crash_env
from tests.faults.harness import Case, FaultStack, hang_env, new_case
from tests.faults.test_process_faults import _verified

LONG = pytest.mark.long_faults

AIRFLOW_DEFAULTS = {
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "300",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "10",
    "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "5",
    "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "30",
    "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "300",
}
"""Airflow 3's own values of the settings :data:`RECOVERY_SETTINGS` changes."""


def _home(cluster_stack: FaultStack, base: Path, retry_delay_s: int | None) -> Iterator[PostgresAirflow]:
    airflow = PostgresAirflow.create(cluster_stack, base, retry_delay_s)
    try:
        yield airflow
    finally:
        airflow.drop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_airflow(
    cluster_stack: FaultStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PostgresAirflow]:
    """The product's DAGs with a 1 s ``retry_delay`` on the fault stack's PostgreSQL."""
    yield from _home(cluster_stack, tmp_path_factory.mktemp("airflow-sched"), 1)


@pytest.fixture(scope="module")
def product_airflow(
    cluster_stack: FaultStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PostgresAirflow]:
    """The product's DAGs exactly as the factory builds them (its retry delays)."""
    yield from _home(cluster_stack, tmp_path_factory.mktemp("airflow-product"), None)


def _committed_epoch(case: Case, run_id: str) -> Any:
    with case.ledger() as ledger:
        epochs = ledger.epochs(EpochFilter(pipeline=case.name))
    assert [(e.state, e.dag_id, e.run_id, e.record_count) for e in epochs] == [
        (EpochState.COMMITTED, case.dag_id, run_id, 200)
    ]
    return epochs[0]


def _finish(case: Case, report: dict[str, Any]) -> None:
    assert case.drain() == 0  # the run took everything: nothing left for a next epoch
    verification = case.verify()
    assert verification.problems == []
    report["verified"] = _verified(verification)


@pytest.mark.parametrize("tree", ["task", pytest.param("worker", marks=LONG)])
def test_write_task_process_tree_killed(
    cluster_stack: FaultStack, pg_airflow: PostgresAirflow, tmp_path: Path, report: dict[str, Any], tree: str
) -> None:
    """The write task's process tree SIGKILLed mid-write: ``task`` = the task process and its
    spark-submit (with Spark's Python workers), ``worker`` = also the LocalExecutor worker
    that supervises it. Try 1 fails (the supervisor reports the exit; or, supervisor gone,
    the heartbeat timeout), try 2 writes the same epoch under the same token, the run commits."""
    report.update(
        order=40,
        fault=f"a running write task's process tree SIGKILLed under a real scheduler (LocalExecutor): "
        f"{'the task process and its spark-submit' if tree == 'task' else 'its LocalExecutor worker too'}",
    )
    case = new_case(cluster_stack, tmp_path, f"sk{tree}", records=200, cap=None)
    release = tmp_path / "release"
    run_id = f"tree-{tree}"
    with AirflowServices.running(pg_airflow, case, {**crash_env(HANG), **hang_env(600, release)}) as airflow:
        airflow.run_held_at_write(case.dag_id, run_id, count=2)
        task_pid, tries = pg_airflow.task_pid(case.dag_id, run_id, "write")
        supervisor = parent_pid(task_pid)
        assert tries == 1 and supervisor is not None and parent_pid(supervisor) == airflow.scheduler_pid
        killed = kill_tree(task_pid if tree == "task" else supervisor)
        release.touch()  # try 2's Spark workers pass the fault point at once
        assert airflow.wait_for_run(case.dag_id, run_id) == "success", airflow.log("scheduler")[-3000:]
        assert_write_retried_once(pg_airflow.task_states(case.dag_id, run_id))
        earlier = pg_airflow.earlier_tries(case.dag_id, run_id)
        assert [t for t in earlier if t[0] == "write"] == [("write", 1, "failed")], earlier
        timed_out = "heartbeat timeout" in pg_airflow.events(case.dag_id, run_id, "write")
        assert timed_out == (tree == "worker")
    epoch = _committed_epoch(case, run_id)
    how = "the heartbeat timeout failed try 1" if timed_out else "the supervisor failed try 1 at once"
    report["observed"] = (
        f"{len(killed)} processes killed; {how}; try 2 wrote epoch {epoch.epoch_id} (same token), "
        "run success, epoch COMMITTED"
    )
    report["recovery"] = "Airflow: a retry in the same run; nobody touched anything"
    _finish(case, report)


@pytest.mark.parametrize("leftovers", [pytest.param("live-on", marks=LONG), "killed"])
def test_scheduler_killed_during_write_then_restarted(
    cluster_stack: FaultStack,
    pg_airflow: PostgresAirflow,
    tmp_path: Path,
    report: dict[str, Any],
    leftovers: str,
) -> None:
    """The scheduler SIGKILLed while the write runs (held at the fault point), a new one
    started: ``live-on`` leaves the dead scheduler's LocalExecutor workers (and the write)
    running, ``killed`` kills its whole session first (``eo-stack up``, a service manager).
    The new scheduler resets the dead one's running write once its heartbeat is old; try 2
    writes the same epoch under the same token and the run commits."""
    report.update(
        order=41,
        fault="the scheduler SIGKILLed while an epoch's write runs, then restarted; the dead scheduler's "
        + ("workers left running" if leftovers == "live-on" else "whole session killed before the restart"),
    )
    case = new_case(cluster_stack, tmp_path, f"ss{leftovers[:4]}", records=200, cap=None)
    release = tmp_path / "release"
    run_id = f"sched-{leftovers}"
    faults = {**crash_env(HANG), **hang_env(600, release)}
    with AirflowServices.running(pg_airflow, case, faults, ADOPTION_SETTINGS) as airflow:
        airflow.run_held_at_write(case.dag_id, run_id, count=2)
        task_pid, _ = pg_airflow.task_pid(case.dag_id, run_id, "write")
        if leftovers == "killed":
            airflow.kill_scheduler_session()
        else:
            airflow.kill_scheduler()
            assert alive(task_pid)  # the worker and its task outlive the scheduler
        airflow.restart_scheduler()
        wait_until("write try 2", lambda: pg_airflow.task_pid(case.dag_id, run_id, "write")[1] == 2, 180)
        release.touch()
        assert airflow.wait_for_run(case.dag_id, run_id) == "success", airflow.log("scheduler")[-3000:]
        states = pg_airflow.task_states(case.dag_id, run_id)
        earlier = pg_airflow.earlier_tries(case.dag_id, run_id)
        events = pg_airflow.events(case.dag_id, run_id, "write")
    assert_write_retried_once(states)
    earlier = [t for t in earlier if t[0] == "write"]
    assert [(task, tries) for task, tries, _ in earlier] == [("write", 1)], earlier
    epoch = _committed_epoch(case, run_id)
    report["observed"] = (
        f"write try 1 ended {earlier[0][2]} (events {sorted(set(events))}); try 2 wrote epoch "
        f"{epoch.epoch_id} (same token), run success, epoch COMMITTED"
    )
    report["recovery"] = "Airflow: the new scheduler reset the dead one's task; a retry in the same run"
    _finish(case, report)


@LONG
@pytest.mark.parametrize("settings", ["airflow-defaults", "recommended"])
def test_time_from_write_kill_to_epoch_committed(
    cluster_stack: FaultStack,
    product_airflow: PostgresAirflow,
    tmp_path: Path,
    report: dict[str, Any],
    settings: str,
) -> None:
    """A figure, not a bound: the write's LocalExecutor worker with its task and Spark job
    SIGKILLed mid-write; seconds until the epoch is COMMITTED, with Airflow's defaults and
    with :data:`RECOVERY_SETTINGS`, both with the factory's retries and retry delays."""
    values = AIRFLOW_DEFAULTS if settings == "airflow-defaults" else dict(RECOVERY_SETTINGS)
    report.update(order=42, fault=f"write kill to epoch committed, {settings} ({values})")
    case = new_case(cluster_stack, tmp_path, f"kt{settings[:3]}", records=200, cap=None)
    release = tmp_path / "release"
    run_id = f"kill-time-{settings}"
    faults = {**crash_env(HANG), **hang_env(1200, release)}
    with AirflowServices.running(product_airflow, case, faults, values) as airflow:
        airflow.run_held_at_write(case.dag_id, run_id, count=2)
        task_pid, _ = product_airflow.task_pid(case.dag_id, run_id, "write")
        supervisor = parent_pid(task_pid)
        assert supervisor is not None
        killed_at = datetime.datetime.now(datetime.UTC)
        started = time.monotonic()
        kill_tree(supervisor)
        release.touch()
        assert airflow.wait_for_run(case.dag_id, run_id, timeout=1200) == "success"
        (failed_at,) = product_airflow.query(
            "SELECT min(dttm) FROM log WHERE dag_id = %s AND run_id = %s AND task_id = 'write'"
            " AND event = 'heartbeat timeout'",
            case.dag_id,
            run_id,
        )[0]
        ((retry_start, retry_end),) = product_airflow.query(
            "SELECT start_date, end_date FROM task_instance WHERE dag_id = %s AND run_id = %s"
            " AND task_id = 'write'",
            case.dag_id,
            run_id,
        )
    waited = time.monotonic() - started
    epoch = _committed_epoch(case, run_id)
    figures = {
        "failed (heartbeat timeout)": (failed_at - killed_at).total_seconds(),
        "try 2 started": (retry_start - killed_at).total_seconds(),
        "try 2 ended": (retry_end - killed_at).total_seconds(),
        "epoch committed": (epoch.committed_at - killed_at).total_seconds(),
    }
    shown = ", ".join(f"{what} +{seconds:.0f} s" for what, seconds in figures.items())
    print(f"\n{settings}: kill -> {shown} (waited {waited:.0f} s)")
    report["observed"] = f"{settings}: kill -> {shown}"
    report["recovery"] = "Airflow: heartbeat timeout, a retry in the same run"
    _finish(case, report)
