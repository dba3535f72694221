"""Randomized mode: a seeded schedule of random faults at random points across many epochs.

Knobs (environment): ``EO_FAULT_RANDOM_SEED`` (default 20261122),
``EO_FAULT_RANDOM_COUNT`` (faults to inject; default 2, what CI runs) and
``EO_FAULT_RANDOM_KINDS`` (comma-separated subset of ``FAULT_KINDS``; default all). A
long run::

    EO_FAULT_RANDOM_SEED=7 EO_FAULT_RANDOM_COUNT=200 pytest tests/faults -k randomized

Each round produces a random number of new records (random keys, updates,
tombstones, bad records), injects one random fault at its point (with a random
delay where the point is a moment in time), then runs one stream run (recover first).
At the end the pipeline is drained and every invariant verified. The run is recorded
in RELIABILITY.md (seed, count, faults by kind, lost / wrong rows).
"""

from __future__ import annotations

import datetime
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

from airflow_provider_eo.ledger.states import EpochState
from tests.faults.harness import SIGKILLED, Case, FaultStack, hang_env, new_case
from tests.faults.test_process_faults import _verified

#: Faults before an epoch exists: the reserve step itself fails.
RESERVE_FAULTS = (
    "reserve.after_insert",  # killed after its insert: an orphan RESERVED epoch
    "reserve.in_transaction",  # killed inside its transaction: rolled back, no epoch
    "broker.stall_during_reserve",  # broker SIGSTOPped: reserve fails, no epoch
)
#: Faults while Spark writes a reserved epoch.
WRITE_FAULTS = (
    "worker.sigkill_mid_write",
    "driver.sigkill_mid_write",
    "spark.after_last_batch",
    "spark.after_vote",
    "hbase.kill9_mid_write",
    "postgres.kill9_mid_write",
    "broker.stall_during_write",
)
#: Faults after a clean write (epoch WRITTEN), around commit.
COMMIT_FAULTS = (
    "commit.before_publish",
    "commit.after_publish",
    "postgres.kill9_before_commit",
    "broker.stall_during_commit",
)
FAULT_KINDS = RESERVE_FAULTS + WRITE_FAULTS + COMMIT_FAULTS
KINDS_ENV = "EO_FAULT_RANDOM_KINDS"


def fault_kinds() -> tuple[str, ...]:
    """``FAULT_KINDS``, or the comma-separated subset named by ``EO_FAULT_RANDOM_KINDS``
    (to soak one kind); an unknown name raises ValueError naming it."""
    wanted = [k.strip() for k in os.environ.get(KINDS_ENV, "").split(",") if k.strip()]
    unknown = sorted(set(wanted) - set(FAULT_KINDS))
    if unknown:
        raise ValueError(f"{KINDS_ENV}: unknown fault kind(s) {unknown}; known: {', '.join(FAULT_KINDS)}")
    return tuple(wanted) or FAULT_KINDS


def inject(case: Case, kind: str, rng: random.Random, tag: str, workdir: Path) -> str:
    """Inject one fault of ``kind``; asserts and returns what was observed."""
    if kind in RESERVE_FAULTS:
        return _reserve_fault(case, kind, tag)
    case.recover(tag)
    summary = case.reserve(tag)
    assert summary is not None, "each round produces new records"
    epoch_id = int(summary["epoch_id"])
    if kind in WRITE_FAULTS:
        return _write_fault(case, kind, epoch_id, rng, tag, workdir)
    assert case.write(epoch_id) == 0
    return _commit_fault(case, kind, epoch_id, tag)


def _reserve_fault(case: Case, kind: str, tag: str) -> str:
    if kind == "broker.stall_during_reserve":
        with case.stack.broker_stalled():
            step = case.step("reserve", tag, timeout=60)
        assert step.returncode != 0, step.output[-2000:]
    else:
        step = case.step("reserve", tag, faults=kind)
        assert step.returncode == SIGKILLED, step.output[-2000:]
    with case.ledger() as ledger:
        opened = ledger.open_epochs(case.name)
    assert len(opened) == (1 if kind == "reserve.after_insert" else 0), opened
    return f"reserve exit {step.returncode}, {len(opened)} open epoch(s)"


def _write_fault(case: Case, kind: str, epoch_id: int, rng: random.Random, tag: str, workdir: Path) -> str:
    if kind in ("spark.after_last_batch", "spark.after_vote"):
        rc = case.write(epoch_id, faults=kind)
        assert rc != 0
    elif kind == "worker.sigkill_mid_write":
        rc = case.write(epoch_id, faults="spark.task.after_segment")
        assert rc == 4
    elif kind == "driver.sigkill_mid_write":
        proc = case.start_write(epoch_id)
        proc.wait_for_output("task start")
        time.sleep(rng.uniform(0, 1.5))
        if proc.proc.poll() is None:
            os.kill(proc.driver_pid(), signal.SIGKILL)
        rc = proc.wait()
    elif kind == "broker.stall_during_write":
        proc = case.start_write(epoch_id)
        proc.wait_for_output("writing ranges=")
        with case.stack.broker_stalled():
            rc = proc.wait(180)
        assert rc in (0, 4), proc.output()[-3000:]  # 0: the tasks had read before the stall
    else:  # a service killed and restarted while the tasks stand after a segment
        service = {"hbase.kill9_mid_write": "hbase", "postgres.kill9_mid_write": "postgres"}[kind]
        release = workdir / f"release-{tag}"
        proc = case.start_write(epoch_id, faults="spark.task.after_segment:hang", **hang_env(120, release))
        proc.wait_for_output("task start")
        time.sleep(rng.uniform(0, 1.0))
        case.stack.kill_and_restart(service)
        release.touch()
        rc = proc.wait()
        assert rc in (0, 1, 4), proc.output()[-3000:]
    state = case.epoch(epoch_id).state
    voted = kind == "spark.after_vote" or rc == 0
    assert state is (EpochState.WRITTEN if voted else EpochState.RESERVED), (kind, rc, state)
    return f"exit {rc}, epoch {state.value}"


def _commit_fault(case: Case, kind: str, epoch_id: int, tag: str) -> str:
    if kind in ("commit.before_publish", "commit.after_publish"):
        step = case.step("commit", tag, epoch_id=epoch_id, faults=kind)
        assert step.returncode == SIGKILLED, step.output[-2000:]
    elif kind == "postgres.kill9_before_commit":
        case.stack.kill_and_restart("postgres")
    elif kind == "broker.stall_during_commit":
        with case.stack.broker_stalled():
            step = case.step("commit", tag, epoch_id=epoch_id, timeout=20)
        assert step.returncode != 0
    else:
        raise AssertionError(f"unknown fault kind {kind}")
    assert case.epoch(epoch_id).state is EpochState.WRITTEN
    return "epoch WRITTEN"


def test_randomized_faults(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any], random_runs: list[dict[str, Any]]
) -> None:
    seed = int(os.environ.get("EO_FAULT_RANDOM_SEED", "20261122"))
    count = int(os.environ.get("EO_FAULT_RANDOM_COUNT", "2"))
    kinds_pool = fault_kinds()
    rng = random.Random(seed)
    started = time.monotonic()
    row: dict[str, Any] = report if count <= 2 else {}  # long runs go to the randomized-runs table
    row.update(order=15, fault=f"randomized: seed {seed}, {count} random faults across epochs (CI bound)")
    case = new_case(fault_stack, tmp_path, "rand", partitions=3, records=90, cap=60, seed=seed % 1000)
    kinds: Counter[str] = Counter()
    run: dict[str, Any] = {
        "seed": seed,
        "count": count,
        "outcome": "FAIL",
        "date": datetime.date.today().isoformat(),
    }
    if count > 2:
        random_runs.append(run)  # recorded even when the run fails part-way (outcome says where)
    for i in range(count):
        case.produce(rng.randint(10, 60), seed=rng.randrange(1_000_000))
        kind = rng.choice(kinds_pool)
        kinds[kind] += 1
        run.update(kinds=dict(kinds), outcome=f"FAIL at fault {i + 1} ({kind})")
        observed = inject(case, kind, rng, f"fault-{i}", tmp_path)
        case.run_epoch(f"recover-{i}")  # the next stream run: recover first, then one epoch
        run["duration_s"] = round(time.monotonic() - started)
        print(f"fault {i + 1}/{count} {kind}: {observed}; {run['duration_s']} s", flush=True)  # -s: progress
    run["outcome"] = "FAIL draining or verifying"
    epochs = case.drain(max_epochs=count + 10)
    verification = case.verify()
    run.update(
        epochs=verification.epochs_committed,
        records=verification.records_produced,
        lost=sum(1 for p in verification.problems if "missing" in p or "cursor" in p),
        wrong=sum(1 for p in verification.problems if "unexpected" in p or "wrong" in p),
        duration_s=round(time.monotonic() - started),
    )
    assert verification.problems == []
    run["outcome"] = "pass"
    row["observed"] = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))
    row["recovery"] = f"direct: one stream run after each fault, then {epochs} epoch(s) drained"
    row["verified"] = _verified(verification)
