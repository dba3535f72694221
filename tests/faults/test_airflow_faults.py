"""Faults that go through real Airflow: racing ``dags test`` runs, a zombie task under a scheduler.

Both use :class:`tests.faults.airflow_services.PostgresAirflow` (the metadata DB on the
stack's PostgreSQL: several Airflow processes write it at once) and the product's DAGs
with a 1 s ``retry_delay`` (retries=2 as the factory sets them).
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochState
from tests.faults.airflow_services import (
    HEARTBEAT_TIMEOUT_S,
    AirflowServices,
    Orphans,
    PostgresAirflow,
    adopt_orphans,
    alive,
    children,
    cmdline,
    descendants,
    parent_pid,
    wait_until,
)
from tests.faults.crash_points import crash_env
from tests.faults.harness import Case, FaultStack, hang_env, new_case
from tests.faults.test_process_faults import _verified

HANG = "spark.task.after_segment:hang"


@pytest.fixture(scope="module")
def pg_airflow(
    fault_stack: FaultStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PostgresAirflow]:
    """A migrated AIRFLOW_HOME whose metadata DB lives on the fault stack's PostgreSQL."""
    home = tmp_path_factory.mktemp("airflow-pg-home")
    airflow = PostgresAirflow.create(fault_stack, home)
    try:
        yield airflow
    finally:
        airflow.drop()
        shutil.rmtree(home, ignore_errors=True)


def test_two_airflow_stream_runs_racing(
    fault_stack: FaultStack, pg_airflow: PostgresAirflow, tmp_path: Path, report: dict[str, Any]
) -> None:
    """Two ``airflow dags test`` runs of one stream DAG started at the same instant.

    The winner's Spark write hangs (fault point) until the loser's run has ended, so the
    loser's reserve sees the winner's open epoch on every try: exactly one epoch, the
    loser's reserve fails with OpenEpochConflict on all 3 tries (retries=2), its write and
    commit are upstream_failed, its recover aborted nothing; then the winner commits.
    """
    report.update(
        order=16,
        fault="two real `airflow dags test` stream runs of one pipeline started at the same instant "
        "(PostgreSQL metadata DB); the winner's Spark write held until the loser's run ended",
    )
    case = new_case(fault_stack, tmp_path, "afrace", records=200, cap=None)
    release = tmp_path / "release-race"
    runner = pg_airflow.runner(case, {**crash_env(HANG), **hang_env(600, release)})
    runner.reserialize()  # else both runs insert the new DAG and one dies on the unique key
    dates = ("2026-03-01T00:00:00+00:00", "2026-03-02T00:00:00+00:00")
    procs = [
        runner.start(case.dag_id, tmp_path / f"race-{i}.log", logical_date=d) for i, d in enumerate(dates)
    ]
    try:
        wait_until("one racing run ended", lambda: any(p.proc.poll() is not None for p in procs), 300)
        first = next(p for p in procs if p.proc.poll() is not None)
        loser = first.wait(10)
        release.touch()
        winner = next(p for p in procs if p is not first).wait(300)
    finally:
        for proc in procs:
            proc.kill()
    assert (loser.state, winner.state) == ("failed", "success"), (loser.log[-3000:], winner.log[-3000:])

    with case.ledger() as ledger:
        epochs = ledger.epochs(EpochFilter(pipeline=case.name))
    assert [(e.state, e.dag_id, e.run_id, e.record_count) for e in epochs] == [
        (EpochState.COMMITTED, case.dag_id, winner.run_id, 200)
    ]
    (epoch,) = epochs
    assert pg_airflow.task_states(case.dag_id, winner.run_id) == {
        "recover": ("success", 1), "reserve": ("success", 1),
        "write": ("success", 1), "commit": ("success", 1),
    }  # fmt: skip
    assert pg_airflow.task_states(case.dag_id, loser.run_id) == {
        "recover": ("success", 1), "reserve": ("failed", 3),
        "write": ("upstream_failed", 0), "commit": ("upstream_failed", 0),
    }  # fmt: skip
    assert pg_airflow.earlier_tries(case.dag_id, loser.run_id) == [
        ("reserve", 1, "failed"), ("reserve", 2, "failed"),
    ]  # fmt: skip
    conflict = f"already has open epoch {epoch.epoch_id} (RESERVED) owned by dag_id='{case.dag_id}'"
    assert loser.log.count(f"OpenEpochConflict: pipeline '{case.name}' {conflict}") == 3, loser.log[-3000:]
    recovered = pg_airflow.return_value(case.dag_id, loser.run_id, "recover")
    # Whether the loser's recover ran before or after the winner's reserve is a race; either
    # way it never aborts the live winner's epoch.
    assert recovered["aborted"] == [] and recovered["recommitted"] == []
    assert recovered["kept"] in ([], [epoch.epoch_id])
    report["observed"] = (
        f"winner committed epoch {epoch.epoch_id} (200 records); loser's reserve: OpenEpochConflict on "
        f"all 3 tries, run failed, write/commit upstream_failed; loser's recover kept {recovered['kept']}, "
        "aborted nothing"
    )

    after = runner.run(case.dag_id)
    assert after.state == "success", after.log[-3000:]
    assert pg_airflow.task_states(case.dag_id, after.run_id)["reserve"] == ("skipped", 1)
    assert case.drain() == 0
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = (
        "Airflow: nothing to recover (the loser never reserved); a next stream run succeeded, "
        "reserve skipped (no new data)"
    )
    report["verified"] = _verified(verification)


def test_recovery_keeps_the_reserved_epoch_of_a_live_airflow_run(
    fault_stack: FaultStack, pg_airflow: PostgresAirflow, tmp_path: Path, report: dict[str, Any]
) -> None:
    """Recovery driven directly (another run's first task) while a real ``airflow dags test``
    stream run stands in its write (fault point): the operator asks that Airflow
    (``get_dr_count`` of the execution API, ``case.dag_run_count``) and keeps the live run's
    RESERVED epoch. Released, the run commits the same epoch: its transitions are
    RESERVED -> WRITTEN -> COMMITTED, never ABORTED; once the run ended, Airflow counts it
    no longer live."""
    report.update(
        order=54,
        fault="recovery (another run's recover, driven directly) while a real `airflow dags test` stream "
        "run stands in its write with its epoch RESERVED",
    )
    case = new_case(fault_stack, tmp_path, "aflive", records=200, cap=None)
    release = tmp_path / "release-live"
    runner = pg_airflow.runner(case, {**crash_env(HANG), **hang_env(600, release)})
    assert case.dag_run_count is not None
    live = runner.start(case.dag_id, tmp_path / "live.log", logical_date="2026-04-01T00:00:00+00:00")
    try:
        wait_until("the live run's write running", lambda: _write_running(pg_airflow, case), 300)
        with case.ledger() as ledger:
            (epoch,) = ledger.epochs(EpochFilter(pipeline=case.name))
        assert (epoch.state, epoch.dag_id) == (EpochState.RESERVED, case.dag_id)
        live_states = ["queued", "running"]
        assert case.dag_run_count(dag_id=case.dag_id, run_ids=[epoch.run_id], states=live_states) == 1
        recovered = case.recover("recovery-while-live")
        assert (recovered["kept"], recovered["aborted"], recovered["recommitted"]) == (
            [epoch.epoch_id],
            [],
            [],
        )
        assert _transitions(case, epoch.epoch_id) == [(None, "RESERVED")]
        release.touch()
        outcome = live.wait(300)
    finally:
        live.kill()
    assert outcome.state == "success", outcome.log[-3000:]
    assert outcome.run_id == epoch.run_id
    assert case.dag_run_count(dag_id=case.dag_id, run_ids=[epoch.run_id], states=live_states) == 0
    with case.ledger() as ledger:
        epochs = ledger.epochs(EpochFilter(pipeline=case.name))
    assert [(e.epoch_id, e.state, e.run_id, e.record_count) for e in epochs] == [
        (epoch.epoch_id, EpochState.COMMITTED, epoch.run_id, 200)
    ]
    assert _transitions(case, epoch.epoch_id) == [
        (None, "RESERVED"), ("RESERVED", "WRITTEN"), ("WRITTEN", "COMMITTED"),
    ]  # fmt: skip
    report["observed"] = (
        f"epoch {epoch.epoch_id} RESERVED by the live run; Airflow's get_dr_count answered 1 (queued or "
        f"running); recover kept [{epoch.epoch_id}], aborted nothing"
    )
    assert case.drain() == 0
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = (
        "none needed: the live run, released, committed its epoch (RESERVED -> WRITTEN -> COMMITTED); "
        "Airflow then answered 0 for it"
    )
    report["verified"] = _verified(verification)


def _write_running(pg_airflow: PostgresAirflow, case: Case) -> bool:
    """Whether a run of ``case``'s stream DAG has its write task running (its epoch RESERVED)."""
    rows = pg_airflow.query(
        "SELECT state FROM task_instance WHERE dag_id = %s AND task_id = 'write'", case.dag_id
    )
    return [state for (state,) in rows] == ["running"]


def _transitions(case: Case, epoch_id: int) -> list[tuple[str | None, str]]:
    """(from, to) of the epoch's ledger transitions, oldest first."""
    with psycopg2.connect(case.stack.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT from_state, to_state FROM eo.epoch_transitions"
            " WHERE epoch_id = %s ORDER BY transition_id",
            (epoch_id,),
        )
        rows = [(a, b) for a, b in cur.fetchall()]
    conn.close()
    return rows


def test_airflow_zombie_write_task(
    fault_stack: FaultStack, pg_airflow: PostgresAirflow, tmp_path: Path, report: dict[str, Any]
) -> None:
    """A write task's Airflow supervisor and task process SIGKILLed under a real scheduler
    while its spark-submit (held at a fault point) lives on as a zombie writer.

    Airflow's heartbeat timeout fails try 1 and retries the write in the same run: the
    same epoch and fencing token; it writes, votes, the run commits. The next epoch (newer
    updates of the same keys) is committed, then the zombie resumes, writes its old range
    and votes: a no-op under the same token (exit 0), the ledger unchanged, HBase exact.
    """
    report.update(
        order=17,
        fault="Airflow zombie: a write task's supervisor and task process SIGKILLed under a real "
        "scheduler (LocalExecutor) while its spark-submit keeps running; the zombie resumes after newer "
        "epochs committed",
    )
    case = new_case(fault_stack, tmp_path, "afzomb", records=200, cap=120)
    release = tmp_path / "release-zombie"
    with adopt_orphans() as orphans:
        zombie = _zombie_under_scheduler(pg_airflow, case, release, orphans)
        with case.ledger() as ledger:
            (epoch,) = ledger.epochs(EpochFilter(pipeline=case.name))
        assert (epoch.epoch_id, epoch.state, epoch.fencing_token, epoch.run_id) == (
            zombie.epoch_id, EpochState.COMMITTED, zombie.token, zombie.run_id,
        )  # fmt: skip
        report["observed"] = (
            f"heartbeat timeout ({HEARTBEAT_TIMEOUT_S} s) failed write try 1; try 2 wrote epoch "
            f"{epoch.epoch_id} under the same fencing token, run success, epoch COMMITTED; the zombie "
            "spark-submit still running"
        )

        newer = case.drain()  # the 80 newer records (same keys) committed before the zombie resumes
        assert newer == 1
        for pid in zombie.workers:
            os.kill(pid, signal.SIGCONT)
        rc = orphans.wait(zombie.spark, 240)
    assert rc == 0
    with case.ledger() as ledger:
        after = ledger.get_epoch(epoch.epoch_id)
    assert (after.state, after.fencing_token, after.written_at, after.committed_at, after.metrics) == (
        epoch.state, epoch.fencing_token, epoch.written_at, epoch.committed_at, epoch.metrics,
    )  # fmt: skip
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = (
        f"Airflow: retry in the same run (same epoch, same token) committed; {newer} newer epoch drained "
        "directly; the zombie then finished its old range: exit 0, its vote a no-op (ledger unchanged), "
        "its late writes invisible"
    )
    report["verified"] = _verified(verification)


@dataclass(frozen=True)
class Zombie:
    """The orphaned spark-submit of write try 1 (adopted by this process) and what it writes."""

    run_id: str
    spark: int
    workers: list[int]
    epoch_id: int
    token: str


def _zombie_under_scheduler(
    pg_airflow: PostgresAirflow, case: Case, release: Path, orphans: Orphans, run_id: str = "zombie-run"
) -> Zombie:
    """Trigger a stream run under a real scheduler; once write try 1's Spark workers hang at
    the fault point, SIGSTOP them, SIGKILL the task's supervisor (the LocalExecutor worker)
    and then its task process, release the fault point and wait for the run. Asserts the
    Airflow side: heartbeat timeout, try 1 failed, try 2 and the run succeeded. The
    scheduler and its helpers are stopped on return; the zombie spark-submit lives on."""
    faults = {**crash_env(HANG), **hang_env(600, release)}
    with AirflowServices.running(pg_airflow, case, faults) as airflow:
        workers = airflow.run_held_at_write(case.dag_id, run_id, count=2)
        ((task_pid, tries),) = pg_airflow.query(
            "SELECT pid, try_number FROM task_instance"
            " WHERE dag_id = %s AND run_id = %s AND task_id = 'write'",
            case.dag_id,
            run_id,
        )
        assert tries == 1
        supervisor = parent_pid(task_pid)
        assert supervisor is not None and parent_pid(supervisor) == airflow.scheduler_pid
        (spark,) = [pid for pid in children(task_pid) if "java" in Path(cmdline(pid)[0]).name]
        assert set(workers) <= set(descendants(spark)), (workers, descendants(spark))
        argv = cmdline(spark)
        zombie = Zombie(
            run_id=run_id,
            spark=spark,
            workers=workers,
            epoch_id=int(argv[argv.index("--epoch-id") + 1]),
            token=argv[argv.index("--fencing-token") + 1],
        )

        for pid in workers:  # the zombie stays put until the test resumes it, file or not
            os.kill(pid, signal.SIGSTOP)
        os.kill(supervisor, signal.SIGKILL)
        wait_until("the task process adopted", lambda: parent_pid(task_pid) == os.getpid())
        os.kill(task_pid, signal.SIGKILL)
        assert orphans.wait(task_pid, 30) == -signal.SIGKILL
        wait_until("spark-submit adopted", lambda: parent_pid(spark) == os.getpid())
        release.touch()  # the retry's Spark workers pass the fault point at once

        assert airflow.wait_for_run(case.dag_id, run_id) == "success", airflow.log("scheduler")[-3000:]
        assert pg_airflow.task_states(case.dag_id, run_id) == {
            "recover": ("success", 1), "reserve": ("success", 1), "write": ("success", 2),
            "commit": ("success", 1),
        }  # fmt: skip
        assert pg_airflow.earlier_tries(case.dag_id, run_id) == [("write", 1, "failed")]
        assert "heartbeat timeout" in pg_airflow.events(case.dag_id, run_id, "write")
    assert alive(spark)
    return zombie
