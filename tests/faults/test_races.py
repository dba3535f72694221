"""Concurrency: racing stream runs, a zombie writer, a backfill beside the stream."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from airflow_provider_eo.dags.factory import backfill_dag_id
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.operators.backfill import ReserveBackfillEpochOperator
from tests.faults.harness import REPO, FaultStack, hang_env, new_case
from tests.faults.test_process_faults import _verified
from tests.task_context import task_context


def test_two_stream_runs_racing(fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]) -> None:
    report.update(
        order=9, fault="two stream runs reserving for the same pipeline at the same instant (2 rounds)"
    )
    case = new_case(fault_stack, tmp_path, "race", records=200, cap=None, dead_letter_topic=True)
    winners = []
    for round_no in range(2):
        argv = [sys.executable, "-m", "tests.faults.steps", "reserve", "--pipeline", case.name]
        argv += ["--pipelines-file", str(case.pipelines_file), "--dag-id", case.dag_id]
        procs = [
            subprocess.Popen(
                [*argv, "--run-id", f"race-{round_no}-{side}"],
                env=case.env(),
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for side in ("a", "b")
        ]
        outputs = [p.communicate(timeout=120)[0].decode(errors="replace") for p in procs]
        codes = [p.returncode for p in procs]
        assert sorted(codes) == [0, 1], outputs
        loser = outputs[codes.index(1)]
        assert "OpenEpochConflict" in loser, loser[-2000:]
        with case.ledger() as ledger:
            (open_epoch,) = ledger.open_epochs(case.name)
        winners.append(open_epoch.epoch_id)
        # the winner's run dies; the next round's recovery (in the next reserve race) needs an abort first
        case.recover(f"recover-{round_no}")
    with case.ledger() as ledger:
        assert [e.state for e in ledger.epochs(EpochFilter(pipeline=case.name))] == [EpochState.ABORTED] * 2
    report["observed"] = (
        f"each round exactly one RESERVED epoch ({winners}), the other run got OpenEpochConflict"
    )
    epochs = case.drain()
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = f"direct: recover aborted the dead winners; {epochs} epoch(s) drained"
    report["verified"] = _verified(verification)


def test_zombie_writer_after_abort_and_rereserve(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=10,
        fault="zombie: a Spark job stalls mid-write, its epoch is aborted, re-reserved, rewritten and newer "
        "epochs committed; then the zombie resumes writing its old range and votes",
    )
    case = new_case(fault_stack, tmp_path, "zombie", records=160, cap=120, dead_letter_topic=True)
    summary = case.reserve("zombie-run")
    assert summary is not None
    zombie_epoch = int(summary["epoch_id"])
    release = tmp_path / "release-zombie"
    zombie = case.start_write(
        zombie_epoch,
        faults="spark.task.after_segment:hang",
        token=str(summary["fencing_token"]),
        **hang_env(300, release),
    )
    case.wait_for_rows()
    assert case.recover("new-run")["aborted"] == [zombie_epoch]
    case.produce(40, seed=34)  # newer updates of the same keys, committed before the zombie resumes
    epochs = case.drain()
    assert epochs == 2  # 200 records, 120 per epoch
    release.touch()
    rc = zombie.wait()
    assert rc == 3, zombie.output()[-3000:]
    assert "fenced" in zombie.output().lower()
    assert case.epoch(zombie_epoch).state is EpochState.ABORTED
    report["observed"] = (
        f"zombie epoch {zombie_epoch} aborted by recovery; zombie resumed after {epochs} newer "
        "epochs, exit 3 (fenced out)"
    )
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = (
        "direct: recover aborted, re-reserved the same ranges, drained; zombie's late writes invisible"
    )
    report["verified"] = _verified(verification)


def test_backfill_concurrent_with_stream_overlapping(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=11,
        fault="backfill over [0, high) written concurrently with a stream epoch over an overlapping range",
    )
    case = new_case(fault_stack, tmp_path, "bfill", records=200, cap=120, dead_letter_topic=True)
    stream = case.reserve("stream-run")
    assert stream is not None
    backfill_op = ReserveBackfillEpochOperator(
        task_id="reserve", pipeline=case.name, pipelines_file=str(case.pipelines_file)
    )
    context: Any = {**task_context("backfill-run", backfill_dag_id(case.name)), "params": {"start_offset": 0}}
    backfill = backfill_op.execute(context)
    assert backfill["kind"] == EpochKind.BACKFILL.value
    assert backfill["records_total"] == 200
    procs = [case.start_write(int(stream["epoch_id"])), case.start_write(int(backfill["epoch_id"]))]
    codes = [p.wait() for p in procs]
    assert codes == [0, 0], [p.output()[-2000:] for p in procs]
    # stream recovery never touches the backfill epoch (WRITTEN, owned by the backfill run)
    case.commit(int(stream["epoch_id"]), "stream-run")
    case.commit(int(backfill["epoch_id"]), "backfill-run")
    with case.ledger() as ledger:
        cursors = ledger.cursors(case.name)
    assert sum(cursors.values()) == 120
    report["observed"] = (
        "both writes voted; both committed; cursor moved only by the stream epoch (120 of 200)"
    )
    epochs = case.drain()
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = f"direct: {epochs} more stream epoch(s) drained"
    report["verified"] = _verified(verification)
