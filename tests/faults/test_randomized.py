"""Randomized mode: a seeded schedule of random faults at random points across many epochs.

Knobs (environment): ``EO_FAULT_RANDOM_SEED`` (default 20261122) and
``EO_FAULT_RANDOM_COUNT`` (faults to inject; default 2, what CI runs). A long run::

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

FAULT_KINDS = (
    "reserve.after_insert",
    "worker.sigkill_mid_write",
    "driver.sigkill_mid_write",
    "spark.after_last_batch",
    "spark.after_vote",
    "commit.after_publish",
    "hbase.kill9_mid_write",
    "postgres.kill9_before_commit",
    "broker.stall_during_commit",
)


def inject(case: Case, kind: str, rng: random.Random, tag: str, workdir: Path) -> str:
    """Inject one fault of ``kind``; returns what was observed."""
    if kind == "reserve.after_insert":
        step = case.step("reserve", tag, faults=kind)
        assert step.returncode == SIGKILLED, step.output[-2000:]
        return "reserve killed"
    case.recover(tag)
    summary = case.reserve(tag)
    assert summary is not None, "each round produces new records"
    epoch_id = int(summary["epoch_id"])
    if kind in ("spark.after_last_batch", "spark.after_vote"):
        rc = case.write(epoch_id, faults=kind)
        assert rc != 0
        expected = EpochState.WRITTEN if kind == "spark.after_vote" else EpochState.RESERVED
        assert case.epoch(epoch_id).state is expected
        return f"exit {rc}"
    if kind == "worker.sigkill_mid_write":
        rc = case.write(epoch_id, faults="spark.task.after_segment")
        assert rc == 4
        return "task failed"
    if kind == "driver.sigkill_mid_write":
        proc = case.start_write(epoch_id)
        proc.wait_for_output("task start")
        time.sleep(rng.uniform(0, 1.5))
        if proc.proc.poll() is None:
            os.kill(proc.driver_pid(), signal.SIGKILL)
        rc = proc.wait()
        return f"exit {rc}, epoch {case.epoch(epoch_id).state.value}"
    if kind == "hbase.kill9_mid_write":
        release = workdir / f"release-{tag}"
        proc = case.start_write(epoch_id, faults="spark.task.after_segment:hang", **hang_env(120, release))
        proc.wait_for_output("task start")
        time.sleep(rng.uniform(0, 1.0))
        case.stack.kill_and_restart("hbase")
        release.touch()
        rc = proc.wait()
        assert rc in (0, 4), proc.output()[-3000:]
        return f"exit {rc}"
    assert case.write(epoch_id) == 0
    if kind == "commit.after_publish":
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
    for i in range(count):
        case.produce(rng.randint(10, 60), seed=rng.randrange(1_000_000))
        kind = rng.choice(FAULT_KINDS)
        kinds[kind] += 1
        inject(case, kind, rng, f"fault-{i}", tmp_path)
        case.run_epoch(f"recover-{i}")  # the next stream run: recover first, then one epoch
    epochs = case.drain(max_epochs=count + 10)
    verification = case.verify()
    run.update(
        kinds=dict(kinds),
        epochs=verification.epochs_committed,
        records=verification.records_produced,
        lost=sum(1 for p in verification.problems if "missing" in p or "cursor" in p),
        wrong=sum(1 for p in verification.problems if "unexpected" in p or "wrong" in p),
        duration_s=round(time.monotonic() - started),
    )
    if count > 2:
        random_runs.append(run)
    assert verification.problems == []
    run["outcome"] = "pass"
    row["observed"] = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))
    row["recovery"] = f"direct: one stream run after each fault, then {epochs} epoch(s) drained"
    row["verified"] = _verified(verification)
