"""A stream pipeline under Airflow's CeleryExecutor with two workers, under worker and broker faults.

One Celery Airflow for the module (:mod:`tests.faults.celery_airflow`: the stack's own
``--executor celery`` services on the fault stack); each test serves a pipeline of its own
(its topic, group and HBase table; Spark ``local[1]`` in client mode, one record per HBase
segment so every cell's version is its record's offset: :func:`expected_cells`) and ends
with the exact HBase cells and versions, the ledger's epoch rows and the group's offsets.
A test that strikes a worker or the broker starts it again before it returns (what
``eo-stack up`` does). The worker kill and the broker down at trigger time run in CI (the
Celery Airflow starts in about 30 s, each case takes 30-80 s); the warm shutdown and the
broker restart, faults the kill already covers the hard way (a lost worker, lost
connections), run in long mode (``EO_FAULT_LONG=1``) to keep CI within its budget.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.ledger.model.states import EpochState
from eo_devtools.stack.redis_broker import redis_password
from eo_devtools.stack.service_process import stop_service
from tests.faults.airflow_services import (
    HEARTBEAT_TIMEOUT_S,
    adopt_orphans,
    alive,
    children,
    cmdline,
    descendants,
    parent_pid,
    wait_until,
)
from tests.faults.celery_airflow import CeleryAirflow, expected_cells, running_celery_airflow
from tests.faults.harness import Case, FaultStack, ledger_snapshot, new_case
from tests.faults.test_process_faults import _verified
from tests.spark_startup import spark_conf

RECORDS = 100


@pytest.fixture(scope="module")
def celery_airflow(fault_stack: FaultStack) -> Iterator[CeleryAirflow]:
    with running_celery_airflow(fault_stack) as airflow:
        yield airflow


def _case(stack: FaultStack, workdir: Path, tag: str) -> Case:
    """A pipeline of 100 sample events in 2 partitions, one epoch, written by ``local[1]``."""
    spark = {"split_size": 1000, "conf": spark_conf(), "master": "local[1]"}
    return new_case(stack, workdir, tag, records=RECORDS, cap=None, batch_size=1, spark=spark)


def _assert_exact(case: Case, epoch_id: int) -> None:
    """One COMMITTED epoch over everything produced; cells, versions, offsets, dead letters exact."""
    ends = case.ends()
    assert case.epoch_rows() == [(epoch_id, EpochState.COMMITTED, {tp: (0, end) for tp, end in ends.items()})]
    assert case.group_offsets() == ends
    assert case.hbase_cells() == expected_cells(case.produced, case.spec.column_family)
    verification = case.verify()
    assert verification.problems == []


def _spark_submit(task_pid: int) -> int:
    """The spark-submit JVM the write task process started."""
    (spark,) = [pid for pid in children(task_pid) if "java" in Path(cmdline(pid)[0]).name]
    return spark


def _machine_loss(worker_pid: int, spared: int) -> list[int]:
    """SIGKILL the worker's main process and everything under it (pool processes, the task's
    supervisor and task process) but the tree of ``spared``; all SIGSTOPped first, so none
    reacts to the others' deaths. Returns the pids, once they are gone."""
    keep = {spared, *descendants(spared)}
    victims = [pid for pid in (worker_pid, *descendants(worker_pid)) if pid not in keep]
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_until("the worker's processes gone", lambda: not any(alive(pid) for pid in victims))
    return victims


def test_celery_worker_kill9_mid_write(
    fault_stack: FaultStack, celery_airflow: CeleryAirflow, tmp_path: Path, report: dict[str, Any]
) -> None:
    """The Celery worker running a write SIGKILLed with its pool and task processes (a lost
    machine's Airflow side) while the write's spark-submit lives on, held mid-write.

    The heartbeat timeout fails try 1; try 2 runs on the other worker (its ``hostname``)
    under the same epoch and fencing token and the run commits. Then the first worker's
    spark-submit, a zombie, resumes: it rewrites its range's cells at the same versions and
    its vote is refused as already done under that token (exit 0): the ledger row, the
    cells and the group's offsets stay exactly those of the committed epoch.
    """
    report.update(
        order=50,
        fault="CeleryExecutor, 2 workers: the worker running a write SIGKILLed with its pool and task "
        "processes mid-write; its spark-submit left running (a zombie)",
    )
    airflow = celery_airflow
    case = _case(fault_stack, tmp_path, "cwkill")
    airflow.serve(case)
    airflow.hold_writes()
    with adopt_orphans() as orphans:
        run_id = airflow.trigger(case.dag_id)
        hanging = airflow.wait_for_hanging(case.dag_id, run_id, "write", attempt=1)
        (first,) = airflow.tries(case.dag_id, run_id, "write")
        assert (first.try_number, first.state) == (1, "running")
        assert first.pid is not None
        victim = airflow.worker(first.hostname)
        (survivor,) = [w for w in airflow.workers if w is not victim]
        spark = _spark_submit(first.pid)
        assert hanging in descendants(spark)
        argv = cmdline(spark)
        epoch_id, token = int(argv[argv.index("--epoch-id") + 1]), argv[argv.index("--fencing-token") + 1]

        os.kill(hanging, signal.SIGSTOP)  # the zombie stays put until the test resumes it
        killed = _machine_loss(airflow.pid(victim), spark)
        wait_until("spark-submit adopted", lambda: parent_pid(spark) == os.getpid())
        airflow.release_writes()  # try 2's Spark worker passes the fault point at once

        assert airflow.client.wait_for_run(case.dag_id, run_id) == "success"
        tries = [(t.try_number, t.state, t.hostname) for t in airflow.tries(case.dag_id, run_id, "write")]
        assert tries == [(1, "failed", victim.node), (2, "success", survivor.node)]
        assert "heartbeat timeout" in airflow.events(case.dag_id, run_id, "write")
        assert airflow.task_states(case.dag_id, run_id)["commit"][0] == "success"
        committed = case.epoch(epoch_id)
        assert (committed.fencing_token, committed.run_id) == (token, run_id)
        _assert_exact(case, epoch_id)

        os.kill(hanging, signal.SIGCONT)
        rc = orphans.wait(spark, 240)
    assert rc == 0  # its vote: already voted under this token, nothing done
    after = case.epoch(epoch_id)
    assert (after.state, after.fencing_token, after.written_at, after.committed_at, after.metrics) == (
        committed.state, committed.fencing_token, committed.written_at, committed.committed_at,
        committed.metrics,
    )  # fmt: skip
    _assert_exact(case, epoch_id)
    airflow.restore()  # the lost worker comes back, as eo-stack up brings it
    report["observed"] = (
        f"{len(killed)} processes of {victim.node} killed; heartbeat timeout ({HEARTBEAT_TIMEOUT_S} s) "
        f"failed write try 1; try 2 ran on {survivor.node} under the same epoch {epoch_id} and token, "
        "run success, epoch COMMITTED; the zombie spark-submit then finished its range: exit 0, its "
        "vote a no-op, ledger row unchanged"
    )
    report["recovery"] = "Airflow: the other Celery worker took the retry; nobody touched anything"
    report["verified"] = _verified(case.verify())


@pytest.mark.long_faults
def test_celery_worker_warm_shutdown_mid_write(
    fault_stack: FaultStack, celery_airflow: CeleryAirflow, tmp_path: Path, report: dict[str, Any]
) -> None:
    """The Celery worker running a write sent SIGTERM (Celery's warm shutdown) mid-write: it
    takes no new task, lets the write finish (try 1 succeeds there) and exits; the commit
    runs on the other worker and the epoch commits exactly."""
    report.update(
        order=51,
        fault="CeleryExecutor, 2 workers: the worker running a write stopped gracefully (SIGTERM, "
        "Celery's warm shutdown) mid-write",
    )
    airflow = celery_airflow
    case = _case(fault_stack, tmp_path, "cwwarm")
    airflow.serve(case)
    airflow.hold_writes()
    run_id = airflow.trigger(case.dag_id)
    airflow.wait_for_hanging(case.dag_id, run_id, "write", attempt=1)
    (first,) = airflow.tries(case.dag_id, run_id, "write")
    victim = airflow.worker(first.hostname)
    (survivor,) = [w for w in airflow.workers if w is not victim]
    pid = airflow.pid(victim)
    offset = len(victim.log_path.read_text(errors="replace"))
    os.kill(pid, signal.SIGTERM)  # the main process only, as `airflow celery stop` does
    wait_until(
        "the warm shutdown begun",
        lambda: "Warm shutdown" in victim.log_path.read_text(errors="replace")[offset:],
    )
    airflow.release_writes()
    assert airflow.client.wait_for_run(case.dag_id, run_id) == "success"
    wait_until("the stopped worker gone", lambda: not alive(pid), timeout=60)
    hosts = {
        task: [(t.try_number, t.state, t.hostname) for t in airflow.tries(case.dag_id, run_id, task)]
        for task in ("write", "commit")
    }
    assert hosts == {
        "write": [(1, "success", victim.node)],
        "commit": [(1, "success", survivor.node)],
    }
    epoch_id = case.epoch_rows()[0][0]
    _assert_exact(case, epoch_id)
    airflow.restore()
    report["observed"] = (
        f"{victim.node} took no new task after SIGTERM, finished write try 1 (success) and exited; "
        f"commit ran on {survivor.node}; epoch {epoch_id} COMMITTED, no retry"
    )
    report["recovery"] = "none needed: Celery's warm shutdown let the running write finish"
    report["verified"] = _verified(case.verify())


@pytest.mark.long_faults
def test_celery_broker_restarted_mid_write(
    fault_stack: FaultStack, celery_airflow: CeleryAirflow, tmp_path: Path, report: dict[str, Any]
) -> None:
    """Redis stopped and started again while a write runs: the workers reconnect, the write
    finishes (its result goes to PostgreSQL, not to the broker), the commit is sent through
    the restarted broker and the epoch commits exactly, without a retry."""
    report.update(order=52, fault="CeleryExecutor: the broker (Redis) restarted while a write runs")
    airflow = celery_airflow
    case = _case(fault_stack, tmp_path, "cwredis")
    airflow.serve(case)
    airflow.hold_writes()
    run_id = airflow.trigger(case.dag_id)
    airflow.wait_for_hanging(case.dag_id, run_id, "write", attempt=1)
    offsets = {w.name: len(w.log_path.read_text(errors="replace")) for w in airflow.workers}
    stop_service(airflow.broker)

    def lost_by_all() -> bool:
        return all(
            "Cannot connect to redis" in w.log_path.read_text(errors="replace")[offsets[w.name] :]
            for w in airflow.workers
        )

    wait_until("both workers lost the broker", lost_by_all, timeout=60)
    airflow.restore()  # Redis again, on its port, with its append-only file
    wait_until("both workers answering", lambda: all(w.healthy() for w in airflow.workers), timeout=60)
    airflow.release_writes()
    assert airflow.client.wait_for_run(case.dag_id, run_id) == "success"
    assert {
        task: tries for task, (_, tries) in airflow.task_states(case.dag_id, run_id).items()
    } == dict.fromkeys(("recover", "reserve", "write", "commit"), 1)
    epoch_id = case.epoch_rows()[0][0]
    _assert_exact(case, epoch_id)
    report["observed"] = (
        "both workers lost the broker and reconnected to the restarted Redis; write try 1 finished, "
        f"the commit went through the restarted broker; epoch {epoch_id} COMMITTED, no task retried"
    )
    report["recovery"] = "none needed: Celery reconnects; the task results live in PostgreSQL"
    report["verified"] = _verified(case.verify())


def test_celery_broker_down_at_trigger(
    fault_stack: FaultStack, celery_airflow: CeleryAirflow, tmp_path: Path, report: dict[str, Any]
) -> None:
    """Bad input: Redis down when a stream run is triggered. No task reaches a worker: the
    scheduler cannot send recover (its error names the broker's address and the refusal,
    never the password), each of its 3 tries fails, the run fails, and the ledger is exactly
    as before (no epoch, no partition pinned) and the group has no offsets. Once Redis is
    back, the next run commits everything."""
    report.update(order=53, fault="CeleryExecutor: the broker (Redis) down when a stream run is triggered")
    airflow = celery_airflow
    case = _case(fault_stack, tmp_path, "cwbroker")
    airflow.serve(case)
    airflow.release_writes()
    before = ledger_snapshot(fault_stack.ledger_dsn)
    scheduler = airflow.service("airflow-scheduler")
    offset = len(scheduler.log_path.read_text(errors="replace"))
    stop_service(airflow.broker)
    try:
        run_id = airflow.trigger(case.dag_id)
        state = airflow.client.wait_for_run(case.dag_id, run_id)
    finally:
        airflow.restore()
    assert state == "failed"
    assert airflow.task_states(case.dag_id, run_id) == {
        "recover": ("failed", 3), "reserve": ("upstream_failed", 0),
        "write": ("upstream_failed", 0), "commit": ("upstream_failed", 0),
    }  # fmt: skip
    log = scheduler.log_path.read_text(errors="replace")[offset:]
    refused = f"Error sending Celery workload: Error 111 connecting to 127.0.0.1:{airflow.broker.port}. "
    assert log.count(refused + "Connection refused.") == 3, log[-3000:]
    password = redis_password(airflow.broker.state_dir)
    for service in (*airflow.airflow.services, airflow.broker):  # no log holds the broker's password
        assert password not in service.log_path.read_text(errors="replace"), service.log_path
    assert ledger_snapshot(fault_stack.ledger_dsn) == before
    assert case.epoch_rows() == []
    assert case.group_offsets() == dict.fromkeys(case.ends())

    after = airflow.trigger(case.dag_id)
    assert airflow.client.wait_for_run(case.dag_id, after) == "success"
    epoch_id = case.epoch_rows()[0][0]
    _assert_exact(case, epoch_id)
    report["observed"] = (
        "the scheduler could not send recover (`Error sending Celery workload: Error 111 connecting to "
        "127.0.0.1:<redis port>. Connection refused.`, once per try), 3 tries failed, the run failed; "
        "ledger unchanged, no group offsets"
    )
    report["recovery"] = f"Redis started again: the next run committed epoch {epoch_id} with everything"
    report["verified"] = _verified(case.verify())
