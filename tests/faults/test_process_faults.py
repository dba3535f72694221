"""Processes killed at the protocol's critical points; recovery must restore exactly-once.

Each test: inject, observe the failure (exact exit status and ledger state), recover
with a new stream run (its first task is recover), drain, verify every invariant.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from airflow_provider_eo.ledger.model.states import EpochState
from eo_devtools.demo.airflow_runner import AirflowRunner
from tests.faults.conftest import runner_for
from tests.faults.harness import SIGKILLED, FaultStack, hang_env, new_case


def test_spark_driver_sigkill_mid_write(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(order=1, fault="Spark driver (Python) SIGKILLed mid-write, after HBase rows appeared")
    case = new_case(fault_stack, tmp_path, "drvkill", records=200, cap=None, seed=34, dead_letter_topic=True)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    proc = case.start_write(epoch_id, faults="spark.task.after_segment:hang", **hang_env(15))
    case.wait_for_rows()
    os.kill(proc.driver_pid(), signal.SIGKILL)
    rc = proc.wait()
    assert rc != 0
    assert case.epoch(epoch_id).state is EpochState.RESERVED
    partial_rows = case.hbase_row_count()
    assert partial_rows > 0
    report["observed"] = (
        f"spark-submit exit {rc}; epoch {epoch_id} RESERVED; {partial_rows} rows partially written"
    )

    epochs = case.drain()
    assert case.epoch(epoch_id).state is EpochState.ABORTED
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = f"direct: recover ABORTED epoch {epoch_id}; {epochs} epoch(s) rewrote + drained"
    report["verified"] = _verified(verification)


def test_after_last_hbase_batch_before_vote(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(order=2, fault="Spark driver SIGKILLed after the last HBase batch, before the vote")
    case = new_case(fault_stack, tmp_path, "prevote", records=200, cap=None, dead_letter_topic=True)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    rc = case.write(epoch_id, faults="spark.after_last_batch")
    assert rc != 0
    epoch = case.epoch(epoch_id)
    assert epoch.state is EpochState.RESERVED
    assert sum(r.end - r.start for r in epoch.ranges) == 200
    report["observed"] = (
        f"spark-submit exit {rc}; epoch {epoch_id} RESERVED (all 200 records in HBase, not voted)"
    )

    epochs = case.drain()
    assert case.epoch(epoch_id).state is EpochState.ABORTED
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = f"direct: recover ABORTED epoch {epoch_id}; {epochs} epochs rewrote + drained"
    report["verified"] = _verified(verification)


def test_after_vote_before_commit(fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]) -> None:
    report.update(order=3, fault="Spark driver SIGKILLed right after the vote (WRITTEN), before commit")
    case = new_case(fault_stack, tmp_path, "postvote", records=200, cap=120, dead_letter_topic=True)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    rc = case.write(epoch_id, faults="spark.after_vote")
    assert rc != 0
    assert case.epoch(epoch_id).state is EpochState.WRITTEN
    report["observed"] = f"spark-submit exit {rc}; epoch {epoch_id} WRITTEN, group offsets not published"

    summary = case.recover("recovery-run")
    assert summary["recommitted"] == [epoch_id]
    assert case.epoch(epoch_id).state is EpochState.COMMITTED
    epochs = case.drain()
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = f"direct: recover re-committed epoch {epoch_id}; {epochs} more epoch(s) drained"
    report["verified"] = _verified(verification)


def test_after_publishing_offsets_before_committed(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=4, fault="commit task SIGKILLed after publishing group offsets, before marking COMMITTED"
    )
    case = new_case(fault_stack, tmp_path, "postpub", records=200, cap=120, dead_letter_topic=True)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    assert case.write(epoch_id) == 0
    step = case.step("commit", "fault-run", epoch_id=epoch_id, faults="commit.after_publish")
    assert step.returncode == SIGKILLED, step.output[-3000:]
    epoch = case.epoch(epoch_id)
    assert epoch.state is EpochState.WRITTEN
    from airflow_provider_eo.hooks.kafka import EoKafkaHook

    published = EoKafkaHook().committed_offsets(case.spec.group_id, list(epoch.end_offsets))
    assert published == epoch.end_offsets
    report["observed"] = f"commit killed (SIGKILL); epoch {epoch_id} WRITTEN; group already at its range ends"

    summary = case.recover("recovery-run")
    assert summary["recommitted"] == [epoch_id]
    epochs = case.drain()
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = (
        f"direct: recover re-published the same offsets and COMMITTED; {epochs} epoch(s) drained"
    )
    report["verified"] = _verified(verification)


def test_reserve_killed_after_insert(
    fault_stack: FaultStack, airflow: AirflowRunner, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(order=5, fault="reserve task SIGKILLed after its insert, before the task returns")
    case = new_case(fault_stack, tmp_path, "reskill", records=150, cap=None, dead_letter_topic=True)
    step = case.step("reserve", "fault-run", faults="reserve.after_insert")
    assert step.returncode == SIGKILLED, step.output[-3000:]
    with case.ledger() as ledger:
        (orphan,) = ledger.open_epochs(case.name)
    assert orphan.state is EpochState.RESERVED
    assert orphan.run_id == "fault-run"
    report["observed"] = f"reserve killed (SIGKILL); orphan epoch {orphan.epoch_id} RESERVED, no XCom"

    outcomes = case.drain_airflow(runner_for(airflow, fault_stack, case.pipelines_file))
    assert case.epoch(orphan.epoch_id).state is EpochState.ABORTED
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = (
        f"Airflow: {len(outcomes)} stream run(s); recover ABORTED orphan epoch {orphan.epoch_id}"
    )
    report["verified"] = _verified(verification)


def test_task_cleared_and_rerun_while_epoch_open(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=12,
        fault="write killed before the vote, then the write task cleared and re-run; a Python worker of an "
        "executor SIGKILLed mid-write, then the whole run cleared and re-run",
    )
    case = new_case(fault_stack, tmp_path, "clear", records=200, cap=100, dead_letter_topic=True)
    # Task cleared: the same run re-runs reserve (gets its open epoch back) and write.
    first = case.reserve("run-a")
    assert first is not None
    epoch_a = int(first["epoch_id"])
    assert case.write(epoch_a, faults="spark.after_last_batch") != 0
    again = case.reserve("run-a")
    assert (
        again is not None
        and again["epoch_id"] == epoch_a
        and again["fencing_token"] == first["fencing_token"]
    )
    assert case.write(epoch_a, token=str(first["fencing_token"])) == 0
    case.commit(epoch_a, "run-a")
    # Whole run cleared: recover keeps the run's own epoch, reserve returns it.
    second = case.reserve("run-b")
    assert second is not None
    epoch_b = int(second["epoch_id"])
    rc_worker = case.write(epoch_b, faults="spark.task.after_segment")
    assert rc_worker == 4
    assert case.epoch(epoch_b).state is EpochState.RESERVED
    assert case.recover("run-b")["kept"] == [epoch_b]
    rerun = case.reserve("run-b")
    assert rerun is not None and rerun["epoch_id"] == epoch_b
    assert case.write(epoch_b) == 0
    case.commit(epoch_b, "run-b")
    report["observed"] = (
        f"epoch {epoch_a}: write killed, task re-run got the same epoch and token; epoch {epoch_b}: "
        f"worker killed, spark-submit exit {rc_worker} (task failed), run re-run kept and reused the epoch"
    )
    epochs = case.drain()
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = f"direct: re-runs in the same run ids, then {epochs} epoch(s) drained"
    report["verified"] = _verified(verification)


def _verified(v: Any) -> str:
    return (
        f"ok: {v.records_produced} records, {v.hbase_rows} rows exact, "
        f"{v.epochs_committed} committed epochs, "
        f"{v.dead_letters} dead letters, lag {v.lag}"
    )
