"""Services failing mid-epoch: Kafka, the HBase master and HBase's Thrift server killed with
``kill -9`` and restarted, PostgreSQL killed and restarted, the broker stalled.

These act on the suite's private stack (``fault_stack``) and leave it healthy. Each case
asserts the exact state the fault leaves (exit status, epoch rows, HBase cells with their
versions, group offsets, the topic's records), then recovers, drains and verifies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from eo_devtools.ledger_direct import partition_pins
from tests.faults.harness import Case, FaultStack, hang_env, new_case
from tests.faults.test_process_faults import _verified
from tests.integration.dead_letter_support import read_committed

HANG = "spark.task.after_segment:hang"


def _hold_tasks_then(case: Case, tmp_path: Path, epoch_id: int, act: Any) -> tuple[int, str]:
    """Write ``epoch_id`` with both tasks (one per partition) held after their first HBase
    segment; once both stand there, call ``act()``, release them and wait. Returns the
    spark-submit exit status and its output."""
    release = tmp_path / f"release-{epoch_id}"
    proc = case.start_write(epoch_id, faults=HANG, **hang_env(240, release))
    proc.wait_for_hanging(case.partitions)
    act()
    release.touch()
    return proc.wait(), proc.output()


def _after_write(case: Case, epoch_id: int, rc: int) -> EpochState:
    """The epoch's state must follow the write's exit status (0: WRITTEN, task failed:
    RESERVED); recover re-commits or aborts exactly that epoch. Returns the state it found."""
    state = case.epoch(epoch_id).state
    assert state is (EpochState.WRITTEN if rc == 0 else EpochState.RESERVED), (rc, state)
    recovered = case.recover("recovery-run")
    if rc == 0:
        assert (recovered["recommitted"], recovered["aborted"]) == ([epoch_id], [])
    else:
        assert (recovered["recommitted"], recovered["aborted"]) == ([], [epoch_id])
    return state


def _final_epochs(case: Case, first: int, rc: int) -> None:
    """The ledger's epoch rows after draining: the faulted epoch COMMITTED (rc 0) or ABORTED,
    its ranges then re-read from the same starts by the next epoch; every later epoch
    COMMITTED; the group at the produced ends."""
    rows = case.epoch_rows()
    assert rows[0][:2] == (first, EpochState.COMMITTED if rc == 0 else EpochState.ABORTED), rows
    assert all(state is EpochState.COMMITTED for _, state, _ in rows[1:]), rows
    if rc != 0:
        starts = [{tp: start for tp, (start, _end) in ranges.items()} for _, _, ranges in rows[:2]]
        assert starts[1] == starts[0], rows
    assert case.group_offsets() == case.ends()


def _dead_letter_topic_exact(case: Case) -> str:
    """Assert that the case's dead-letter topic (every partition, ``read_committed``) holds each
    of the ledger's dead letters exactly once, as the exact record with every ``__eo.*`` header
    (:meth:`Case.dead_letter_topic_problems`); call it only while no epoch is RESERVED or
    WRITTEN. Returns what the topic holds, for the report."""
    assert case.spec.dead_letters is not None
    with case.ledger() as ledger:
        assert case.dead_letter_topic_problems(ledger) == []
        letters = ledger.list_dead_letters(case.name)
    found = read_committed(case.stack.bootstrap, case.spec.dead_letters.topic)
    per_partition = [len(found[p]) for p in sorted(found)]
    assert sum(per_partition) == len(letters), (per_partition, len(letters))
    return f"{len(letters)} dead letters on the topic once each ({per_partition} per partition)"


def _record_verified_end(case: Case, fault_stack: FaultStack, report: dict[str, Any], recovery: str) -> None:
    """Assert the drained pipeline verifies without a problem on a healthy stack; record
    ``recovery`` and the verified end state in the case's report row."""
    verification = case.verify()
    assert verification.problems == []
    assert fault_stack.healthy()
    report["recovery"] = recovery
    report["verified"] = _verified(verification)
    if case.spec.dead_letters is not None:
        assert verification.dead_letters > 0, "the case must have dead letters to publish"
        report["verified"] += "; dead-letter topic exact: " + _dead_letter_topic_exact(case)


def _drain_and_verify(
    case: Case, fault_stack: FaultStack, report: dict[str, Any], epoch_id: int, rc: int
) -> None:
    """Drain with recovery, check the faulted epoch's fate by the write's exit code
    (:func:`_final_epochs`), then the verified end state (:func:`_record_verified_end`)."""
    epochs = case.drain()
    _final_epochs(case, epoch_id, rc)
    outcome = "re-committed" if rc == 0 else "aborted"
    recovery = f"direct: recover {outcome} epoch {epoch_id}; {epochs} epoch(s) drained"
    _record_verified_end(case, fault_stack, report, recovery=recovery)


def test_hbase_kill9_and_restart_mid_write(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=6,
        fault="HBase master JVM (master + region server + ZooKeeper) kill -9 while the Spark tasks stand "
        "between two HBase segments, then restarted (WAL replay)",
    )
    case = new_case(fault_stack, tmp_path, "hbkill", records=200, cap=None)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    cells: dict[str, Any] = {}

    def kill_hbase() -> None:
        cells["before"] = case.hbase_cells()
        fault_stack.kill_and_restart("hbase")
        cells["after"] = case.hbase_cells()

    rc, output = _hold_tasks_then(case, tmp_path, epoch_id, kill_hbase)
    assert rc in (ExitCode.OK, ExitCode.TASK_FAILED), output[-3000:]
    before, after = cells["before"], cells["after"]
    assert before, "the tasks had written their first segments"
    assert after == before  # every acknowledged cell back after WAL replay, same value and version
    state = _after_write(case, epoch_id, rc)
    report["observed"] = (
        f"{len(before)} rows written before the kill all back after the restart (cells and versions "
        f"identical); spark-submit exit {rc} "
        f"({'writers reconnected' if rc == 0 else 'a task failed'}); epoch {state.value}"
    )
    _drain_and_verify(case, fault_stack, report, epoch_id, rc)


def test_hbase_thrift_kill9_and_restart_mid_write(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=31,
        fault="HBase Thrift server JVM kill -9 while the Spark tasks stand between two HBase segments "
        "(their connections open), then restarted",
    )
    case = new_case(fault_stack, tmp_path, "thrkill", records=200, cap=None)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    cells: dict[str, Any] = {}

    def kill_thrift() -> None:
        cells["before"] = case.hbase_cells()
        fault_stack.kill_and_restart("hbase-thrift")
        cells["after"] = case.hbase_cells()

    rc, output = _hold_tasks_then(case, tmp_path, epoch_id, kill_thrift)
    assert rc == ExitCode.OK, output[-3000:]
    assert cells["before"] and cells["after"] == cells["before"]
    # Each task's next segment failed once on its dead connection, then went through a new one.
    assert output.count("attempt=1/4") == case.partitions, output[-3000:]
    assert "attempt=2/4" not in output
    state = _after_write(case, epoch_id, rc)
    report["observed"] = (
        f"each of the {case.partitions} tasks: one failed segment write (attempt 1/4), reconnected, "
        f"retried the same segment (same version); spark-submit exit 0; epoch {state.value}"
    )
    epochs = case.drain()
    _final_epochs(case, epoch_id, rc)
    _record_verified_end(
        case,
        fault_stack,
        report,
        recovery=f"direct: recover re-committed epoch {epoch_id}; {epochs} epoch(s) drained",
    )


def test_broker_kill9_and_restart_mid_commit(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=30,
        fault="Kafka broker JVM kill -9 (once, restarted once) while three pipelines' commits stand: "
        "(a) before publishing the group offsets (it publishes to the dead broker, restarted after it "
        "failed), (b) after publishing, before COMMITTED, (c) COMMITTED, its dead letters in an open "
        "Kafka transaction",
    )
    # One epoch of 80 records per pipeline, each with dead letters (seeds 33-35: 2, 3, 1 bad records).
    a_case, b_case, c_case = (
        new_case(fault_stack, tmp_path / part, f"brcommit{part}", records=80, cap=80, seed=seed,
                 dead_letter_topic=True)
        for part, seed in (("a", 33), ("b", 34), ("c", 35))
    )  # fmt: skip
    hook = EoKafkaHook()
    a, b, c = (
        _written_epoch(case, f"run-{part}") for case, part in ((a_case, "a"), (b_case, "b"), (c_case, "c"))
    )
    ends_a, ends_b = a_case.epoch(a).end_offsets, b_case.epoch(b).end_offsets
    assert c_case.spec.dead_letters is not None
    c_topic = c_case.spec.dead_letters.topic
    c_before = read_committed(fault_stack.bootstrap, c_topic)
    held = {
        "a": a_case.start_commit_held(a, "run-a", "commit.before_publish", tmp_path / "release-a"),
        "b": b_case.start_commit_held(b, "run-b", "commit.after_publish", tmp_path / "release-b"),
        "c": c_case.start_commit_held(c, "run-c", "dead_letters.before_commit", tmp_path / "release-c"),
    }
    assert hook.committed_offsets(b_case.spec.group_id, list(ends_b)) == ends_b
    assert c_case.epoch(c).state is EpochState.COMMITTED
    with c_case.ledger() as ledger:
        own = [d for d in ledger.list_dead_letters(c_case.name) if d["epoch_id"] == c]
    assert own, "epoch (c) has dead letters to publish"

    fault_stack.kill("kafka")
    # (a) the publish meets the dead broker
    (tmp_path / "release-a").touch()
    failed = held["a"].result(60)
    assert failed.returncode == 1, failed.output[-3000:]
    group = a_case.spec.group_id
    assert f"EoKafkaError: commit to group '{group}' of " in failed.output, failed.output[-3000:]
    fault_stack.restart("kafka")
    observed = [_after_failed_publish(a_case, a, ends_a, hook)]

    # (b) published, the broker killed and restarted before the ledger marks COMMITTED
    assert (
        hook.committed_offsets(b_case.spec.group_id, list(ends_b)) == ends_b
    )  # __consumer_offsets recovered
    (tmp_path / "release-b").touch()
    done = held["b"].result(60)
    assert done.returncode == 0, done.output[-3000:]
    assert b_case.epoch(b).state is EpochState.COMMITTED
    observed.append(
        f"(b) the group's offsets (epoch {b}'s ends) survived the kill; commit resumed, exit 0, COMMITTED, "
        + _dead_letter_topic_exact(b_case)
    )

    # (c) COMMITTED, its dead letters in the open transaction the killed broker held
    (tmp_path / "release-c").touch()
    done = held["c"].result(90)
    outcome = f"commit exit {done.returncode}"
    if done.returncode != 0:
        assert read_committed(fault_stack.bootstrap, c_topic) == c_before, done.output[
            -3000:
        ]  # none of (c)'s
        retry = c_case.step("commit", "run-c", epoch_id=c)
        assert retry.returncode == 0, retry.output[-3000:]
        outcome += ", the topic without its letters; the retried commit (no-op) published them, exit 0"
    observed.append(
        f"(c) epoch {c} COMMITTED, its {len(own)} dead letters produced in an open Kafka transaction "
        f"when the broker was killed and restarted; {outcome}; " + _dead_letter_topic_exact(c_case)
    )
    report["observed"] = "; ".join(observed)

    recovered, verified = [], []
    for part, case, epoch_id in (("a", a_case, a), ("b", b_case, b), ("c", c_case, c)):
        epochs = case.drain()
        assert [(e, s) for e, s, _ in case.epoch_rows()] == [(epoch_id, EpochState.COMMITTED)]
        assert case.group_offsets() == case.ends()
        assert case.topic_contents() == case.produced_contents()
        _record_verified_end(case, fault_stack, report, recovery="")
        recovered.append(f"({part}) {epochs} epoch(s) drained")
        verified.append(f"({part}) {report['verified']}")
    report["recovery"] = "direct: recover re-committed (a); " + ", ".join(recovered)
    report["verified"] = "; ".join(verified)


def _written_epoch(case: Case, run_id: str) -> int:
    """Reserve an epoch of ``case`` and write it (exit 0); its id."""
    epoch_id = int(case.reserve(run_id)["epoch_id"])  # type: ignore[index]
    assert case.write(epoch_id) == 0
    return epoch_id


def _after_failed_publish(
    case: Case, epoch_id: int, ends: dict[tuple[str, int], int], hook: EoKafkaHook
) -> str:
    """Case (a) after the broker's restart: the epoch WRITTEN, the group without offsets, the
    dead-letter topic empty; recover re-commits it and publishes its letters once."""
    assert case.spec.dead_letters is not None
    group = case.spec.group_id
    assert case.epoch(epoch_id).state is EpochState.WRITTEN
    assert hook.committed_offsets(group, list(ends)) == {tp: None for tp in ends}
    assert read_committed(case.stack.bootstrap, case.spec.dead_letters.topic) == {0: [], 1: [], 2: []}
    assert case.recover("recover-a")["recommitted"] == [epoch_id]
    assert hook.committed_offsets(group, list(ends)) == ends
    return (
        f"(a) commit exit 1 (EoKafkaError naming group and offsets), epoch {epoch_id} WRITTEN, group without "
        "offsets and dead-letter topic empty after the restart; recover re-committed it: "
        + _dead_letter_topic_exact(case)
    )


def test_postgres_restart_mid_epoch_each_phase(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=7,
        fault="PostgreSQL kill -9 + restart (once, for three pipelines at once) (a) after reserve, "
        "(c) after the vote before commit, (b) during the write",
    )
    # One epoch of 80 records per pipeline (cap 80): the faulted epoch is the only one.
    a_case, c_case, b_case = (
        new_case(fault_stack, tmp_path / part, f"pgkill{part}", records=80, cap=80) for part in "acb"
    )
    a = int(a_case.reserve("run-a")["epoch_id"])  # type: ignore[index]
    c = _written_epoch(c_case, "run-c")
    b = int(b_case.reserve("run-b")["epoch_id"])  # type: ignore[index]
    release = tmp_path / "release-pg"
    proc = b_case.start_write(b, faults="spark.task.after_segment:hang", **hang_env(120, release))
    b_case.wait_for_rows()

    fault_stack.kill_and_restart("postgres")
    release.touch()
    # (a) between reserve and write
    assert a_case.write(a) == 0
    a_case.commit(a, "run-a")
    observed = ["(a) write after the restart voted, commit ok"]
    # (c) WRITTEN, then PostgreSQL restarts before commit
    assert c_case.epoch(c).state is EpochState.WRITTEN
    assert c_case.recover("run-c2")["recommitted"] == [c]
    observed.append("(c) WRITTEN survived the restart, recover re-committed it")
    # (b) during the write: the driver's and tasks' ledger connections die before the vote
    rc_b = proc.wait()
    assert rc_b in (0, 1, 4), proc.output()[-3000:]
    observed.append(f"(b) write exit {rc_b}, epoch {b_case.epoch(b).state.value}")
    report["observed"] = "; ".join(observed)
    recovered, verified = [], []
    for part, case in (("a", a_case), ("c", c_case), ("b", b_case)):
        epochs = case.drain()
        _record_verified_end(case, fault_stack, report, recovery="")
        recovered.append(f"({part}) {epochs} epoch(s) drained")
        verified.append(f"({part}) {report['verified']}")
    report["recovery"] = "direct: recover (re-commit / abort); " + ", ".join(recovered)
    report["verified"] = "; ".join(verified)


def test_broker_stalled_during_reserve_write_commit(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=8,
        fault="broker SIGSTOPped (longer than the 4 s client timeouts) during reserve, during the write, "
        "during commit",
    )
    case = new_case(fault_stack, tmp_path, "stall", records=200, cap=100, dead_letter_topic=True)
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
    assert EoKafkaHook().committed_offsets(case.spec.group_id, list(case.ends())) == case.ends()
    _record_verified_end(
        case,
        fault_stack,
        report,
        recovery=f"direct: SIGCONT, recover re-committed/aborted, {epochs} epoch(s) drained",
    )


def test_postgres_restart_during_reserve_and_commit(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=7,
        fault="PostgreSQL kill -9 + restart (once, for three pipelines at once) while reserve holds its "
        "open transaction (epoch inserted, not committed); while commit stands before publishing; "
        "after publishing, before COMMITTED",
    )
    # One epoch of 80 records per pipeline (cap 80): the faulted step's epoch is the only one.
    tags = {"reserve": "pgtxr", "commit.before_publish": "pgtxb", "commit.after_publish": "pgtxa"}
    cases = {
        part: new_case(fault_stack, tmp_path / tag, tag, records=80, cap=80) for part, tag in tags.items()
    }
    held = {}
    for point in ("commit.before_publish", "commit.after_publish"):
        case = cases[point]
        epoch_id = _written_epoch(case, f"run-{point}")
        release = tmp_path / f"release-{point}"
        held[point] = (epoch_id, case.start_commit_held(epoch_id, f"run-{point}", point, release))
    reserving = cases["reserve"]
    reserve = reserving.start_step(
        "reserve",
        "run-r",
        faults="reserve.in_transaction:hang",
        extra_env=hang_env(120, tmp_path / "release-reserve"),
    )
    reserve.wait_for_output("EO fault point reserve.in_transaction: hanging")
    with reserving.ledger() as ledger:
        assert (
            ledger.epochs(EpochFilter(pipeline=reserving.name)) == []
        )  # inserted, but not visible: uncommitted

    fault_stack.kill_and_restart("postgres")
    for point in ("reserve", "commit.before_publish", "commit.after_publish"):
        (tmp_path / f"release-{point}").touch()

    failed = reserve.result(60)
    assert failed.returncode == 1, failed.output[-3000:]
    assert "LedgerUnavailable: epoch ledger unavailable at 127.0.0.1:" in failed.output, failed.output[-3000:]
    assert "may or may not have been applied" in failed.output
    with reserving.ledger() as ledger:
        assert ledger.epochs(EpochFilter(pipeline=reserving.name)) == []
        assert partition_pins(ledger, reserving.name) == {}  # the first pins died with the transaction
    epoch_r = int(reserving.reserve("run-a")["epoch_id"])  # type: ignore[index]
    assert [(r.partition, r.start) for r in reserving.epoch(epoch_r).ranges] == [(0, 0), (1, 0)]
    assert reserving.write(epoch_r) == 0
    reserving.commit(epoch_r, "run-a")
    observed = [
        "reserve: exit 1 LedgerUnavailable (commit outcome unknown), no epoch and no pins survived; "
        f"the next reserve got epoch {epoch_r} from offset 0, written and committed"
    ]

    for point, (epoch_id, commit) in held.items():
        case = cases[point]
        failed = commit.result(60)
        assert failed.returncode == 1, failed.output[-3000:]
        assert "LedgerUnavailable: epoch ledger unavailable at 127.0.0.1:" in failed.output
        epoch = case.epoch(epoch_id)
        assert epoch.state is EpochState.WRITTEN
        published = EoKafkaHook().committed_offsets(case.spec.group_id, list(epoch.end_offsets))
        assert published == epoch.end_offsets  # published before the ledger call failed
        assert case.recover(f"recover-{point}")["recommitted"] == [epoch_id]
        assert case.epoch(epoch_id).state is EpochState.COMMITTED
        observed.append(
            f"commit at {point}: exit 1 LedgerUnavailable, epoch {epoch_id} WRITTEN with the group "
            "already at its ends; recover re-committed it"
        )
    report["observed"] = "; ".join(observed)
    recovered, verified = [], []
    for part, case in cases.items():
        epochs = case.drain()
        _record_verified_end(case, fault_stack, report, recovery="")
        recovered.append(f"{part}: {epochs} epoch(s) drained")
        verified.append(f"({part}) {report['verified']}")
    report["recovery"] = "direct: next reserve / recover re-commit; " + ", ".join(recovered)
    report["verified"] = "; ".join(verified)
