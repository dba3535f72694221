"""The kills and retries YARN adds, in cluster deploy mode on the stack's real YARN (long mode).

Each test writes one pipeline (2 partitions, 200 sample records with updates, tombstones and
bad records, dead letters published to a topic; no cap, so one epoch covers them all) with
the write step in YARN cluster deploy mode (``tests/faults/yarn_writes.py``), strikes it
(``tests/faults/yarn_kinds.py``), recovers with the next stream run (in YARN too), and
asserts the exact end: the ledger's epochs and their transitions, every HBase cell with its
version equal to a fault-free write of the same records (a control case, written in
``local[2]``), the group's offsets at the produced ends, and the verified end state (dead
letters in the ledger and once each on their topic). Each costs two or three YARN
applications (40-60 s each on a loaded 2-core machine) and a control write.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.ledger.model.states import EpochState
from tests.faults.harness import Case, FaultStack, new_case
from tests.faults.test_process_faults import _verified
from tests.faults.yarn_kinds import YarnStrike, check_strike, inject_yarn_fault
from tests.faults.yarn_writes import yarn_case, yarn_running

pytestmark = pytest.mark.long_faults


@pytest.fixture(scope="module")
def yarn(fault_stack: FaultStack) -> Iterator[FaultStack]:
    """The fault stack with its YARN running (started here if needed, stopped afterwards)."""
    ours = not fault_stack.local.yarn_client_env()
    yarn_running(fault_stack)
    try:
        yield fault_stack
    finally:
        if ours:
            fault_stack.local.yarn_down()


def faulted_case(stack: FaultStack, workdir: Path, tag: str, **options: Any) -> Case:
    return yarn_case(
        stack, workdir / "faulted", tag, records=200, cap=None, dead_letter_topic=True, **options
    )


def transitions(case: Case, epoch_id: int) -> list[tuple[str | None, str]]:
    with case.ledger() as ledger:
        return [(t.from_state, t.to_state) for t in ledger.history(epoch_id)]


def assert_exact_end(case: Case, stack: FaultStack, workdir: Path, report: dict[str, Any]) -> None:
    """Cells and versions equal to a fault-free write of the same records, the group at the
    produced ends, and every invariant of :meth:`Case.verify` (dead letters included)."""
    control = new_case(stack, workdir / "control", "yctl", records=200, cap=None, dead_letter_topic=True)
    assert control.produced_contents() == {
        (control.spec.topics[0], p): rows for (_topic, p), rows in case.produced_contents().items()
    }  # the same records at the same offsets
    assert control.run_epoch("control-run") is not None
    cells = case.hbase_cells()
    assert cells == control.hbase_cells()
    assert case.group_offsets() == case.ends()
    verification = case.verify()
    assert verification.problems == []
    report["verified"] = (
        _verified(verification) + f"; {len(cells)} rows, cells and versions = a fault-free write"
    )


def test_airflow_worker_kill9_leaves_a_zombie_driver_whose_vote_is_fenced(
    yarn: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=46,
        fault="YARN cluster mode: the write step's process tree (the Airflow side) kill -9 while the "
        "driver, in YARN, stands before its vote; no on_kill: the application runs on (a zombie)",
    )
    case = faulted_case(yarn, tmp_path, "yzomb")
    strike = inject_yarn_fault(case, "yarn.airflow_worker_kill9_zombie", random.Random(1), "zombie", tmp_path)
    check_strike("yarn.airflow_worker_kill9_zombie", strike)
    ranges = case.epoch_rows()[0][2]
    # the zombie wrote every cell of its range, then its vote was refused: nothing in the ledger
    assert transitions(case, strike.epoch_id) == [(None, "RESERVED"), ("RESERVED", "ABORTED")]
    assert case.hbase_row_count() > 0
    committed = case.run_epoch("next-run")
    assert committed is not None
    assert case.run_epoch("drained") is None
    assert case.epoch_rows() == [
        (strike.epoch_id, EpochState.ABORTED, ranges),
        (committed, EpochState.COMMITTED, ranges),
    ]
    assert transitions(case, committed) == [
        (None, "RESERVED"),
        ("RESERVED", "WRITTEN"),
        ("WRITTEN", "COMMITTED"),
    ]
    assert_exact_end(case, yarn, tmp_path, report)
    report["observed"] = f"{strike.describe()}; the zombie's driver logged 'vote fenced out'"
    report["recovery"] = (
        f"recovery aborted epoch {strike.epoch_id}; the next run's epoch {committed} committed"
    )


def am_kill(yarn: FaultStack, tmp_path: Path, attempts: int | None) -> tuple[Case, YarnStrike]:
    case = faulted_case(yarn, tmp_path, "yam", max_app_attempts=attempts)
    strike = inject_yarn_fault(case, "yarn.am_kill9_mid_write", random.Random(2), "amkill", tmp_path)
    check_strike("yarn.am_kill9_mid_write", strike)
    return case, strike


def test_am_kill9_with_two_attempts_commits_the_epoch_once(
    yarn: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=47,
        fault="YARN cluster mode, spark.yarn.maxAppAttempts=2: the ApplicationMaster JVM kill -9 while the "
        "tasks stand after their first HBase segment",
    )
    case, strike = am_kill(yarn, tmp_path, attempts=2)
    # attempt 2, a second driver of the same epoch and token, rewrote the epoch and voted
    assert strike.returncode == 0, strike.output[-3000:]
    assert [(s, f, n) for s, f, n in strike.apps.values()] == [("FINISHED", "SUCCEEDED", 2)]
    assert strike.state is EpochState.WRITTEN
    ranges = case.epoch_rows()[0][2]
    case.commit(strike.epoch_id, "amkill")
    assert case.run_epoch("drained") is None
    assert case.epoch_rows() == [(strike.epoch_id, EpochState.COMMITTED, ranges)]
    assert transitions(case, strike.epoch_id) == [
        (None, "RESERVED"), ("RESERVED", "WRITTEN"), ("WRITTEN", "COMMITTED")
    ]  # fmt: skip
    assert_exact_end(case, yarn, tmp_path, report)
    report["observed"] = strike.describe()
    report["recovery"] = "none needed: attempt 2 wrote and voted; committed"


def test_am_kill9_under_the_default_pin_fails_the_step_and_the_next_run_commits(
    yarn: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=48,
        fault="YARN cluster mode, the provider's pin spark.yarn.maxAppAttempts=1: the ApplicationMaster JVM "
        "kill -9 while the tasks stand after their first HBase segment",
    )
    case, strike = am_kill(yarn, tmp_path, attempts=None)
    assert strike.returncode == 1, strike.output[-3000:]
    assert "YarnApplicationFailed" in strike.output, strike.output[-3000:]
    assert [(s, f, n) for s, f, n in strike.apps.values()] == [("FAILED", "FAILED", 1)]
    assert strike.state is EpochState.RESERVED
    ranges = case.epoch_rows()[0][2]
    committed = case.run_epoch("next-run")  # recovery aborts the epoch; a new one covers its range
    assert committed is not None and case.run_epoch("drained") is None
    assert case.epoch_rows() == [
        (strike.epoch_id, EpochState.ABORTED, ranges),
        (committed, EpochState.COMMITTED, ranges),
    ]
    assert transitions(case, strike.epoch_id) == [(None, "RESERVED"), ("RESERVED", "ABORTED")]
    assert_exact_end(case, yarn, tmp_path, report)
    report["observed"] = strike.describe()
    report["recovery"] = (
        f"recovery aborted epoch {strike.epoch_id}; the next run's epoch {committed} committed"
    )


def test_nodemanager_kill9_mid_write_then_restarted(
    yarn: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=49,
        fault="YARN cluster mode: the NodeManager JVM (the only node) kill -9 while the tasks stand after "
        "their first HBase segment, then started again (same node id)",
    )
    case = faulted_case(yarn, tmp_path, "ynm")
    strike = inject_yarn_fault(case, "yarn.nodemanager_kill9_mid_write", random.Random(3), "nmkill", tmp_path)
    check_strike("yarn.nodemanager_kill9_mid_write", strike)
    # What YARN does: the restarted NodeManager re-registers knowing no container, the RM
    # releases the AM's container (exit -100, "released on a *lost* node"), and under the
    # pin of 1 attempt the application FAILS; no task reruns inside it: the step fails and
    # the next run (Airflow's retry) writes the epoch's ranges again.
    assert strike.returncode == 1, strike.output[-3000:]
    assert [(s, f, n) for s, f, n in strike.apps.values()] == [("FAILED", "FAILED", 1)]
    assert "exitCode: -100" in strike.output, strike.output[-3000:]
    assert strike.state is EpochState.RESERVED
    ranges = case.epoch_rows()[0][2]
    recovered = case.run_epoch("next-run")
    assert recovered is not None and case.run_epoch("drained") is None
    assert case.epoch_rows() == [
        (strike.epoch_id, EpochState.ABORTED, ranges),
        (recovered, EpochState.COMMITTED, ranges),
    ]
    assert transitions(case, strike.epoch_id) == [(None, "RESERVED"), ("RESERVED", "ABORTED")]
    assert_exact_end(case, yarn, tmp_path, report)
    report["observed"] = strike.describe()
    report["recovery"] = f"recovery aborted epoch {strike.epoch_id}; next run's epoch {recovered} committed"
