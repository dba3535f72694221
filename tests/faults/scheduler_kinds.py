"""Randomized-mode fault kinds under a real Airflow scheduler (LocalExecutor).

Each kind runs one stream DAG run through Airflow itself (api-server, dag-processor and a
LocalExecutor scheduler, :class:`AirflowServices`, started for the round and stopped after
it), holds the write's Spark tasks at ``spark.task.after_segment`` and strikes the
Airflow side of the running write:

* ``airflow.scheduler_kill9_mid_write``: the scheduler SIGKILLed with its whole session
  (its LocalExecutor workers and the write task with them), then a new scheduler started;
  it resets the dead one's task once that one's heartbeat is old;
* ``airflow.task_tree_kill9_mid_write``: the write task's process tree SIGKILLed, at a
  random depth: the task process with its spark-submit (the LocalExecutor worker that
  supervises it fails the try at once), or the worker too (the heartbeat timeout does).

Nobody aborts, clears or marks anything: the run must succeed through Airflow's own
retries, with the write on its second try, and commit exactly one epoch. The Airflow
metadata DB (a database on the fault stack's PostgreSQL) is created at the run's first
Airflow kind and dropped at its end (:class:`SchedulerRounds`); between rounds no Airflow
process runs, so the other kinds (a PostgreSQL kill among them) strike only the product.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochState
from tests.faults.airflow_services import (
    ADOPTION_SETTINGS,
    HANG,
    AirflowServices,
    PostgresAirflow,
    assert_write_retried_once,
    kill_tree,
    parent_pid,
    wait_until,
)
from tests.faults.crash_points import crash_env
from tests.faults.harness import Case, FaultStack, hang_env

AIRFLOW_FAULTS = ("airflow.scheduler_kill9_mid_write", "airflow.task_tree_kill9_mid_write")


class SchedulerRounds:
    """The randomized run's Airflow home: created when first asked for, dropped by :meth:`close`."""

    def __init__(self, stack: FaultStack, base: Path) -> None:
        self.stack = stack
        self.base = base
        self._home: PostgresAirflow | None = None

    def home(self) -> PostgresAirflow:
        """The home (metadata DB migrated, the product's DAGs with a 1 s retry delay)."""
        if self._home is None:
            self._home = PostgresAirflow.create(self.stack, self.base)
        return self._home

    def close(self) -> None:
        if self._home is not None:
            self._home.drop()
            shutil.rmtree(self.base, ignore_errors=True)
            self._home = None


def inject_airflow_fault(case: Case, kind: str, rng: random.Random, tag: str, rounds: SchedulerRounds) -> str:
    """One stream DAG run under the scheduler with fault ``kind`` struck mid-write; asserts
    that Airflow alone finished it (write on try 2, run success, one epoch COMMITTED) and
    returns what was observed."""
    home = rounds.home()
    release = rounds.base / f"release-{tag}"
    run_id = f"rand-{tag}"
    faults = {**crash_env(HANG), **hang_env(600, release)}
    with AirflowServices.running(home, case, faults, ADOPTION_SETTINGS) as airflow:
        airflow.run_held_at_write(case.dag_id, run_id, count=1)
        task_pid, tries = home.task_pid(case.dag_id, run_id, "write")
        assert tries == 1, tries
        if kind == "airflow.scheduler_kill9_mid_write":
            airflow.kill_scheduler_session()
            airflow.restart_scheduler()
            wait_until("write try 2", lambda: home.task_pid(case.dag_id, run_id, "write")[1] == 2, 180)
            how = "scheduler and its session killed, a new scheduler reset the task"
        elif kind == "airflow.task_tree_kill9_mid_write":
            supervisor = parent_pid(task_pid)
            assert supervisor is not None
            depth = rng.choice(("task", "worker"))
            killed = kill_tree(task_pid if depth == "task" else supervisor)
            how = f"{len(killed)} processes of the {depth}'s tree killed"
        else:
            raise AssertionError(f"unknown fault kind {kind}")
        release.touch()
        state = airflow.wait_for_run(case.dag_id, run_id)
        assert state == "success", airflow.log("scheduler")[-3000:]
        states = home.task_states(case.dag_id, run_id)
    assert_write_retried_once(states)
    with case.ledger() as ledger:
        epochs = ledger.epochs(EpochFilter(pipeline=case.name, run_id=run_id))
    assert [(e.state, e.dag_id) for e in epochs] == [(EpochState.COMMITTED, case.dag_id)], epochs
    return f"{how}; write try 2 wrote epoch {epochs[0].epoch_id}, run success, epoch COMMITTED"
