"""Services failing mid-epoch: HBase gateway kill -9 + restart, PostgreSQL restart, broker stall.

These act on the suite's private stack (``fault_stack``) and leave it healthy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger.states import EpochState
from tests.faults.harness import FaultStack, hang_env, new_case
from tests.faults.test_process_faults import _verified


def test_hbase_gateway_kill9_and_restart_mid_write(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=6, fault="HBase Thrift gateway kill -9 and restart while the Spark tasks are mid-write"
    )
    case = new_case(fault_stack, tmp_path, "hbkill", records=200, cap=None)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    release = tmp_path / "release-hbase"
    proc = case.start_write(epoch_id, faults="spark.task.after_segment:hang", **hang_env(120, release))
    case.wait_for_rows()
    fault_stack.kill_and_restart("hbase")
    release.touch()
    rc = proc.wait()
    assert rc in (0, 4), proc.output()[-3000:]
    state = case.epoch(epoch_id).state
    assert state is (EpochState.WRITTEN if rc == 0 else EpochState.RESERVED)
    report["observed"] = (
        f"spark-submit exit {rc} ({'writer reconnected' if rc == 0 else 'task failed'}); epoch {state.value}"
    )
    recovered = case.recover("recovery-run")
    epochs = case.drain()
    verification = case.verify()
    assert verification.problems == []
    assert fault_stack.healthy()
    report["recovery"] = (
        f"direct: recover {recovered['recommitted'] or recovered['aborted']}; {epochs} epoch(s) drained"
    )
    report["verified"] = _verified(verification)


def test_postgres_restart_mid_epoch_each_phase(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=7,
        fault="PostgreSQL kill -9 + restart (a) after reserve, (c) after the vote before commit, "
        "(b) during the write",
    )
    case = new_case(fault_stack, tmp_path, "pgkill", records=240, cap=80)
    observed = []
    # (a) between reserve and write
    a = int(case.reserve("run-a")["epoch_id"])  # type: ignore[index]
    fault_stack.kill_and_restart("postgres")
    assert case.write(a) == 0
    case.commit(a, "run-a")
    observed.append("(a) write after the restart voted, commit ok")
    # (c) WRITTEN, then PostgreSQL restarts before commit
    c = int(case.reserve("run-c")["epoch_id"])  # type: ignore[index]
    assert case.write(c) == 0
    fault_stack.kill_and_restart("postgres")
    assert case.epoch(c).state is EpochState.WRITTEN
    assert case.recover("run-c2")["recommitted"] == [c]
    observed.append("(c) WRITTEN survived the restart, recover re-committed it")
    # (b) during the write: the driver's and tasks' ledger connections die before the vote
    b = int(case.reserve("run-b")["epoch_id"])  # type: ignore[index]
    release = tmp_path / "release-pg"
    proc = case.start_write(b, faults="spark.task.after_segment:hang", **hang_env(120, release))
    case.wait_for_rows()
    fault_stack.kill_and_restart("postgres")
    release.touch()
    rc_b = proc.wait()
    assert rc_b in (0, 1, 4), proc.output()[-3000:]
    observed.append(f"(b) write exit {rc_b}, epoch {case.epoch(b).state.value}")
    report["observed"] = "; ".join(observed)
    epochs = case.drain()
    verification = case.verify()
    assert verification.problems == []
    assert fault_stack.healthy()
    report["recovery"] = f"direct: recover (re-commit / abort), {epochs} epoch(s) drained"
    report["verified"] = _verified(verification)


def test_broker_stalled_during_reserve_write_commit(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=8,
        fault="broker SIGSTOPped (longer than the 4 s client timeouts) during reserve, during the write, "
        "during commit",
    )
    case = new_case(fault_stack, tmp_path, "stall", records=200, cap=100)
    observed = []
    with fault_stack.broker_stalled():
        step = case.step("reserve", "run-r", timeout=60)
    assert step.returncode != 0
    with case.ledger() as ledger:
        assert ledger.open_epochs(case.name) == []
    observed.append(
        "reserve " + ("timed out" if step.timed_out else f"failed (exit {step.returncode})") + ", no epoch"
    )

    epoch_w = int(case.reserve("run-w")["epoch_id"])  # type: ignore[index]
    # The driver has planned the tasks; the broker stalls before they read (the range reader
    # prefetches a whole small range, so a stall after the first segment would go unnoticed).
    proc = case.start_write(epoch_w)
    proc.wait_for_output("writing ranges=")
    with fault_stack.broker_stalled():
        rc = proc.wait(180)
    assert rc == 4, proc.output()[-3000:]
    assert "RangeReadError" in proc.output()
    assert case.epoch(epoch_w).state is EpochState.RESERVED
    observed.append(f"write exit {rc} (RangeReadError: no progress), epoch RESERVED")
    case.recover("run-w2")

    epoch_c = int(case.reserve("run-c")["epoch_id"])  # type: ignore[index]
    assert case.write(epoch_c) == 0
    with fault_stack.broker_stalled():
        commit = case.step("commit", "run-c", epoch_id=epoch_c, timeout=30)
    assert commit.returncode != 0
    assert case.epoch(epoch_c).state is EpochState.WRITTEN
    observed.append(
        "commit " + ("timed out (killed)" if commit.timed_out else f"failed (exit {commit.returncode})")
    )
    observed.append(f"epoch {epoch_c} WRITTEN")
    report["observed"] = "; ".join(observed)
    epochs = case.drain()
    assert case.epoch(epoch_c).state is EpochState.COMMITTED
    verification = case.verify()
    assert verification.problems == []
    assert EoKafkaHook().committed_offsets(case.spec.group_id, list(case.ends())) == case.ends()
    report["recovery"] = f"direct: SIGCONT, recover re-committed/aborted, {epochs} epoch(s) drained"
    report["verified"] = _verified(verification)


def test_postgres_restart_during_reserve_and_commit(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=7,
        fault="PostgreSQL kill -9 + restart while reserve holds its open transaction (epoch inserted, "
        "not committed); while commit stands before publishing; after publishing, before COMMITTED",
    )
    case = new_case(fault_stack, tmp_path, "pgtx", records=240, cap=80)
    observed = []

    release = tmp_path / "release-reserve"
    reserve = case.start_step(
        "reserve", "run-r", faults="reserve.in_transaction:hang", extra_env=hang_env(120, release)
    )
    reserve.wait_for_output("EO fault point reserve.in_transaction: hanging")
    with case.ledger() as ledger:
        assert ledger.list_epochs(pipeline=case.name) == []  # inserted, but not visible: uncommitted
    fault_stack.kill_and_restart("postgres")
    release.touch()
    failed = reserve.result(60)
    assert failed.returncode == 1, failed.output[-3000:]
    assert "LedgerUnavailable: epoch ledger unavailable at 127.0.0.1:" in failed.output, failed.output[-3000:]
    assert "may or may not have been applied" in failed.output
    with case.ledger() as ledger:
        assert ledger.list_epochs(pipeline=case.name) == []
        assert ledger.partition_pins(case.name) == {}  # the first pins died with the transaction
    epoch_a = int(case.reserve("run-a")["epoch_id"])  # type: ignore[index]
    assert [(r.partition, r.start) for r in case.epoch(epoch_a).ranges] == [(0, 0), (1, 0)]
    observed.append(
        "reserve: exit 1 LedgerUnavailable (commit outcome unknown), no epoch and no pins survived; "
        f"the next reserve got epoch {epoch_a} from offset 0"
    )

    group = case.spec.group_id
    for epoch_id, point in ((epoch_a, "commit.before_publish"), (None, "commit.after_publish")):
        if epoch_id is None:
            epoch_id = int(case.reserve(f"run-{point}")["epoch_id"])  # type: ignore[index]
        assert case.write(epoch_id) == 0
        release = tmp_path / f"release-{point}"
        commit = case.start_step(
            "commit",
            f"run-{point}",
            epoch_id=epoch_id,
            faults=f"{point}:hang",
            extra_env=hang_env(120, release),
        )
        commit.wait_for_output(f"EO fault point {point}: hanging")
        fault_stack.kill_and_restart("postgres")
        release.touch()
        failed = commit.result(60)
        assert failed.returncode == 1, failed.output[-3000:]
        assert "LedgerUnavailable: epoch ledger unavailable at 127.0.0.1:" in failed.output
        epoch = case.epoch(epoch_id)
        assert epoch.state is EpochState.WRITTEN
        published = EoKafkaHook().committed_offsets(group, list(epoch.end_offsets))
        assert published == epoch.end_offsets  # published before the ledger call failed
        assert case.recover(f"recover-{point}")["recommitted"] == [epoch_id]
        assert case.epoch(epoch_id).state is EpochState.COMMITTED
        observed.append(
            f"commit at {point}: exit 1 LedgerUnavailable, epoch {epoch_id} WRITTEN with the group "
            "already at its ends; recover re-committed it"
        )
    report["observed"] = "; ".join(observed)
    epochs = case.drain()
    verification = case.verify()
    assert verification.problems == []
    assert fault_stack.healthy()
    report["recovery"] = f"direct: next reserve / recover re-commit; {epochs} epoch(s) drained"
    report["verified"] = _verified(verification)
