"""Session mode (``spark.mode: session``) under kills: the Connect server and the write task.

One Spark Connect server for the module (``tests/faults/connect_server.py``: the stack's
server, local[2], whose Python workers pause right after an HBase segment while a gate file
exists), restarted by the server-kill case. Each case has a pipeline of its own in session
mode (2 partitions, batches of 10, dead letters published to a topic); the write task runs in
a child process as ``WriteEpochOperator`` (``tests/faults/steps.py``), the Airflow task's own
process.

* Row 55: the server (JVM and Python workers) SIGKILLed while the epoch's job stands after
  its first HBase segments, then restarted on the same port. The task fails naming the epoch
  (not voted); the next try, under the same fencing token, writes the epoch on the restarted
  server and votes; the commit publishes exactly the range ends.
* Row 56: the write task's process SIGKILLed (no ``on_kill``) while its job stands on the
  server: the job goes on and writes every cell of its range, but nothing votes (the epoch
  stays RESERVED with no metrics). Recovery aborts the epoch; a vote under the old lease is
  refused (the ledger unchanged), a late try of the old epoch is fenced out (exit 3, nothing
  written), and the next epoch writes the same range: every cell equal, version included, to
  what the zombie wrote.
* Row 57: the randomized mode's session variant: the same two kinds drawn in random order
  (CI: each once), with the reserve and commit kinds beside them in long mode.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.ledger.planning.fencing import Fenced, WriteLease
from airflow_provider_eo.ledger.protocol import EpochProtocol
from eo_devtools.demo.expected_state import JsonOracle, fold_rows
from eo_devtools.demo.verification import scan_table
from tests.conftest import LONG_MODE_ENV
from tests.faults.connect_server import FaultConnectServer, session_writer, start_session_write
from tests.faults.harness import SIGKILLED, Case, FaultStack, new_case
from tests.faults.test_process_faults import _verified
from tests.faults.test_randomized import (
    COMMIT_FAULTS,
    RESERVE_FAULTS,
    _commit_fault,
    _reserve_fault,
    fault_schedule,
)

pytestmark = [pytest.mark.spark]

#: The session kinds of the randomized mode.
SESSION_FAULTS = ("connect.kill9_mid_write", "task.kill9_without_on_kill")
TASK_FAILED = "session-mode write ended TASK_FAILED (exit code 4), epoch not voted by this try"
Cells = dict[bytes, dict[bytes, tuple[bytes, int]]]


@pytest.fixture(scope="module")
def connect(fault_stack: FaultStack) -> Iterator[FaultConnectServer]:
    """The module's Spark Connect server (restarted by the server-kill case)."""
    server = FaultConnectServer(fault_stack.state_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def session_case(
    stack: FaultStack, workdir: Path, tag: str, connect: FaultConnectServer, **options: Any
) -> Case:
    """A pipeline in session mode, every write a try of the write task on ``connect``."""
    options = {"records": 60, "seed": 38, "cap": None, "batch_size": 10, **options}
    case = new_case(stack, workdir, tag, dead_letter_topic=True, spark={"mode": "session"}, **options)
    case.writer = session_writer(connect)
    return case


def reserved(case: Case, run_id: str) -> tuple[int, str]:
    summary = case.reserve(run_id)
    assert summary is not None
    return int(summary["epoch_id"]), str(summary["fencing_token"])


def wait_for_all_cells(case: Case, timeout: float = 240) -> Cells:
    """Wait until HBase holds exactly the visible cells the produced records make (a job
    without a task to report to finishing its range); the cells with their versions."""
    expected = fold_rows(case.produced, JsonOracle(case.spec.column_family))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hbase = case.stack.hbase()
        try:
            if scan_table(hbase, case.spec.hbase_table) == expected:
                return case.hbase_cells()
        finally:
            hbase.close()
        time.sleep(0.5)
    raise AssertionError(f"HBase {case.spec.hbase_table} not complete after {timeout}s")


def kill_server_mid_write(
    case: Case, connect: FaultConnectServer, epoch_id: int, token: str, run_id: str
) -> Cells:
    """Try 1 of the write held after its first segments, the server SIGKILLed and restarted;
    asserts the try failed naming the epoch, not voted. Returns the cells it left."""
    connect.close_gate()
    first = start_session_write(case, connect, epoch_id, token, run_id, 1)
    connect.wait_paused()
    partial = case.hbase_cells()
    connect.kill9()
    connect.open_gate()
    connect.start()
    failed = first.result(timeout=420)
    assert not failed.timed_out and failed.returncode == 1, failed.output[-3000:]
    assert f"pipeline={case.name} epoch_id={epoch_id}: {TASK_FAILED}" in failed.output
    epoch = case.epoch(epoch_id)
    assert (epoch.state, epoch.metrics) == (EpochState.RESERVED, None)
    return partial


def kill_task_mid_write(
    case: Case, connect: FaultConnectServer, epoch_id: int, token: str, run_id: str
) -> None:
    """Try 1 of the write held after its first segments, its process SIGKILLed (no
    ``on_kill``); the job is released and lives on as a zombie on the server."""
    connect.close_gate()
    task = start_session_write(case, connect, epoch_id, token, run_id, 1)
    connect.wait_paused()
    os.killpg(task.proc.pid, signal.SIGKILL)
    assert task.proc.wait(30) == SIGKILLED
    connect.open_gate()


def test_connect_server_kill9_mid_epoch(
    fault_stack: FaultStack, connect: FaultConnectServer, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=55,
        fault="Spark Connect server (JVM and Python workers) SIGKILLed mid-epoch, the job held after "
        "its first HBase segments; restarted on the same port",
    )
    case = session_case(fault_stack, tmp_path, "sckill", connect)
    epoch_id, token = reserved(case, "kill-run")
    partial = kill_server_mid_write(case, connect, epoch_id, token, "kill-run")
    assert partial
    ends = case.ends()
    assert case.group_offsets() == dict.fromkeys(ends)
    report["observed"] = (
        f"try 1 exit 1 ({TASK_FAILED}); epoch {epoch_id} RESERVED, no metrics; "
        f"{len(partial)} rows partly written; group offsets unset; server back in {connect.starts[-1]} s"
    )

    second = start_session_write(case, connect, epoch_id, token, "kill-run", 2).result(420)
    assert second.returncode == 0, second.output[-3000:]
    epoch = case.epoch(epoch_id)
    assert (epoch.state, epoch.fencing_token) == (EpochState.WRITTEN, token)
    assert epoch.metrics is not None and epoch.metrics["bad_records"] == case.verify().bad_records_produced
    case.commit(epoch_id, "kill-run")
    assert case.epoch_rows() == [(epoch_id, EpochState.COMMITTED, {tp: (0, end) for tp, end in ends.items()})]
    assert case.group_offsets() == ends
    final = case.hbase_cells()
    for row, cells in partial.items():  # the killed try's cells: as they were, or newer versions
        for column, (value, version) in cells.items():
            now = final.get(row, {}).get(column)
            assert now is None or now[1] > version or now == (value, version), (row, column, now)
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = (
        f"direct: try 2 of the write task (same fencing token) wrote epoch {epoch_id} on the restarted "
        "server and voted WRITTEN; committed"
    )
    report["verified"] = _verified(verification) + "; one epoch COMMITTED over [0, end) of both partitions"


def test_write_task_killed_without_on_kill_leaves_a_zombie_job_that_cannot_vote(
    fault_stack: FaultStack, connect: FaultConnectServer, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=56,
        fault="session-mode write task SIGKILLed without on_kill while its job stands on the Connect "
        "server; the job goes on (zombie)",
    )
    case = session_case(fault_stack, tmp_path, "sczombie", connect)
    epoch_id, token = reserved(case, "zombie-run")
    with case.ledger() as ledger:  # what the zombie's vote would hold
        lease = EpochProtocol(ledger).begin_write(case.name, epoch_id, token)
    assert isinstance(lease, WriteLease)
    kill_task_mid_write(case, connect, epoch_id, token, "zombie-run")
    zombie_cells = wait_for_all_cells(case)
    epoch = case.epoch(epoch_id)
    assert (epoch.state, epoch.metrics) == (EpochState.RESERVED, None)  # every cell written, no vote
    ends = case.ends()
    assert case.group_offsets() == dict.fromkeys(ends)

    summary = case.recover("next-run")  # the zombie's run is dead: its epoch is aborted
    assert case.epoch(epoch_id).state is EpochState.ABORTED, summary
    with case.ledger() as ledger:
        refused = EpochProtocol(ledger).vote(lease, {"records": 0})
    assert isinstance(refused, Fenced)
    aborted = case.epoch(epoch_id)
    assert (aborted.state, aborted.metrics) == (EpochState.ABORTED, None)
    late = start_session_write(case, connect, epoch_id, token, "zombie-run", 2).result(300)
    assert late.returncode == 1 and "FENCED_OUT (exit code 3)" in late.output, late.output[-3000:]
    report["observed"] = (
        f"task exit -9; the zombie job wrote all {len(zombie_cells)} rows of epoch {epoch_id}, which stayed "
        "RESERVED without metrics; after recovery's abort its lease's vote was refused (Fenced, ledger "
        "unchanged) and a late try 2 exited FENCED_OUT (3), nothing written"
    )

    next_epoch = case.run_epoch("next-run")
    assert next_epoch is not None
    ranges = {tp: (0, end) for tp, end in ends.items()}
    assert case.epoch_rows() == [
        (epoch_id, EpochState.ABORTED, ranges),
        (next_epoch, EpochState.COMMITTED, ranges),
    ]
    assert case.group_offsets() == ends
    assert case.hbase_cells() == zombie_cells  # the same cells at the same versions
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = (
        f"direct: recover aborted epoch {epoch_id}; epoch {next_epoch} wrote the same range on the "
        "session and committed"
    )
    report["verified"] = _verified(verification) + "; every cell equal, version included, to the zombie's"


def session_fault(case: Case, connect: FaultConnectServer, kind: str, tag: str) -> str:
    """Inject session kind ``kind`` on a new epoch; what was observed."""
    case.recover(tag)
    epoch_id, token = reserved(case, tag)
    if kind == "connect.kill9_mid_write":
        kill_server_mid_write(case, connect, epoch_id, token, tag)
        return f"epoch {epoch_id}: task failed, RESERVED"
    kill_task_mid_write(case, connect, epoch_id, token, tag)
    return f"epoch {epoch_id}: task killed, zombie job released"


def test_randomized_session_faults(
    fault_stack: FaultStack, connect: FaultConnectServer, tmp_path: Path, report: dict[str, Any]
) -> None:
    long = "EO_FAULT_RANDOM_COUNT" in os.environ or os.environ.get(LONG_MODE_ENV) == "1"
    seed = int(os.environ.get("EO_FAULT_RANDOM_SEED", "20261129"))
    count = int(os.environ.get("EO_FAULT_RANDOM_COUNT", "8" if long else str(len(SESSION_FAULTS))))
    kinds = SESSION_FAULTS + (RESERVE_FAULTS + COMMIT_FAULTS if long else ())
    rng = random.Random(seed)
    schedule = fault_schedule(rng, kinds, count)
    report.update(
        order=57, fault=f"randomized, session mode: seed {seed}, {count} faults ({', '.join(schedule)})"
    )
    case = session_case(
        fault_stack, tmp_path, "screw", connect, partitions=3, records=45, cap=30, seed=seed % 1000
    )
    started = time.monotonic()
    observed = []
    for i, kind in enumerate(schedule):
        case.produce(rng.randint(10, 30), seed=rng.randrange(1_000_000))
        tag = f"fault-{i}"
        if kind in SESSION_FAULTS:
            observed.append(f"{kind}: {session_fault(case, connect, kind, tag)}")
        elif kind in RESERVE_FAULTS:
            observed.append(f"{kind}: {_reserve_fault(case, kind, tag)}")
        else:
            case.recover(tag)
            epoch_id, _ = reserved(case, tag)
            assert case.write(epoch_id) == 0
            observed.append(f"{kind}: {_commit_fault(case, kind, epoch_id, rng, tag, tmp_path)}")
        case.run_epoch(f"recover-{i}")
    epochs = case.drain(max_epochs=count + 10)
    verification = case.verify()
    assert verification.problems == []
    report["observed"] = "; ".join(observed)
    report["recovery"] = (
        f"direct: one stream run after each fault, then {epochs} epoch(s) drained; "
        f"{round(time.monotonic() - started)} s"
    )
    report["verified"] = _verified(verification) + "; each dead letter once on the dead-letter topic"
