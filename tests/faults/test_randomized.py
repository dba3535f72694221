"""Randomized mode: a seeded schedule of random faults at random points across many epochs.

Knobs (environment): ``EO_FAULT_RANDOM_SEED`` (default 20261122),
``EO_FAULT_RANDOM_COUNT`` (faults to inject; default 2, what CI runs) and
``EO_FAULT_RANDOM_KINDS`` (comma-separated subset of ``FAULT_KINDS``; default all). A
long run (``-s`` prints one line per fault and, at the end, seconds per kind)::

    EO_FAULT_RANDOM_SEED=7 EO_FAULT_RANDOM_COUNT=200 pytest -s tests/faults/test_randomized.py

Two variants: small records (the sample events, about 60 bytes), and big records, where
about 40% of the updates are between 100 KB and 1 MB, near the default
``max_record_bytes``, so every segment is bounded by ``batch_bytes`` (``-k big`` runs only it).
CI runs only the big-records variant (same seed, so the same schedule, plus big records);
the small one runs once ``EO_FAULT_RANDOM_COUNT`` is set or in long mode (``EO_FAULT_LONG=1``).

On YARN (``EO_FAULT_RANDOM_YARN=1``, ``tests/faults/yarn_kinds.py``) every epoch is written
by the write step in YARN cluster deploy mode on the stack's YARN, and a run draws the YARN
kinds (ApplicationMaster kill with 1 or 2 attempts, NodeManager kill, the Airflow side
killed leaving a zombie driver) beside the reserve and commit kinds (the write kinds and
the Airflow kinds strike a ``local[2]`` spark-submit or a LocalExecutor task: not drawn).
``EO_FAULT_RANDOM_BUDGET_S`` ends a run early, after the fault that crosses that many
seconds; the run is recorded with the faults it ran.

Runs of more than 2 faults, and long mode, also draw the kinds under a real Airflow
scheduler (``tests/faults/scheduler_kinds.py``: the scheduler, or a running write task's
process tree, SIGKILLed; Airflow's own retries finish the run).

Each round produces a random number of new records (random keys, updates, tombstones,
bad records), injects the next fault of the schedule (:func:`fault_schedule`: shuffled
passes over the kinds, so every kind comes once before any comes twice) at its point
(with a random delay where the point is a moment in time), then runs one stream run
(recover first). At the end the pipeline is drained and every invariant verified. A
run of more than 2 faults is recorded in RELIABILITY.md (seed, count, faults by kind,
lost / wrong rows, duration, seconds per fault).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger.model.states import EpochState
from eo_devtools.stack.topology import Topology
from tests.conftest import LONG_MODE_ENV
from tests.faults import reliability, reliability_provenance
from tests.faults.harness import SIGKILLED, Case, FaultStack, hang_env, new_case
from tests.faults.scheduler_kinds import AIRFLOW_FAULTS, SchedulerRounds, inject_airflow_fault
from tests.faults.test_process_faults import _verified
from tests.faults.topology_faults import TOPOLOGY_FAULTS, inject_topology_fault, topology_kinds
from tests.faults.yarn_kinds import YARN_FAULTS, check_strike, inject_yarn_fault, on_yarn
from tests.faults.yarn_writes import yarn_case, yarn_running

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
    "hbase.kill9_mid_write",  # the HMaster JVM (master, region server, ZooKeeper): WAL replay
    "thrift.kill9_mid_write",  # HBase's Thrift server JVM: the tasks' connections break
    "postgres.kill9_mid_write",
    "broker.kill9_mid_write",  # the Kafka JVM, as the tasks start reading: log recovery
    "broker.stall_during_write",
)
#: Faults after a clean write (epoch WRITTEN), around commit.
COMMIT_FAULTS = (
    "commit.before_publish",
    "commit.after_publish",
    "postgres.kill9_before_commit",
    "broker.kill9_mid_commit",  # the Kafka JVM while commit stands before/after publishing
    "broker.stall_during_commit",
)
#: Write faults that kill and restart a service while the tasks stand after a segment.
SERVICE_KILLS_MID_WRITE = {
    "hbase.kill9_mid_write": "hbase",
    "thrift.kill9_mid_write": "hbase-thrift",
    "postgres.kill9_mid_write": "postgres",
}
FAULT_KINDS = RESERVE_FAULTS + WRITE_FAULTS + COMMIT_FAULTS
KINDS_ENV = "EO_FAULT_RANDOM_KINDS"
BUDGET_ENV = "EO_FAULT_RANDOM_BUDGET_S"


#: The single broker's own kinds: on a Kafka cluster the cluster kinds take their place.
SINGLE_BROKER_FAULTS = tuple(kind for kind in FAULT_KINDS if kind.startswith("broker."))


def fault_kinds(topology: Topology, *, with_airflow: bool) -> tuple[str, ...]:
    """The kinds ``topology`` can run (``FAULT_KINDS``, without the single broker's on a
    Kafka cluster, plus :func:`topology_kinds`, plus ``AIRFLOW_FAULTS`` ``with_airflow``),
    or the comma-separated subset named by ``EO_FAULT_RANDOM_KINDS`` (to soak one kind,
    Airflow's included); a name it cannot run raises ValueError."""
    single = () if topology.kafka_brokers == 1 else SINGLE_BROKER_FAULTS
    known = tuple(kind for kind in FAULT_KINDS if kind not in single) + topology_kinds(topology)
    if on_yarn():  # the write step in YARN cluster mode: its kinds replace the local writes'
        known = tuple(k for k in known if k in RESERVE_FAULTS + COMMIT_FAULTS) + YARN_FAULTS
        with_airflow = False
    wanted = [k.strip() for k in os.environ.get(KINDS_ENV, "").split(",") if k.strip()]
    unknown = sorted(set(wanted) - set(known + AIRFLOW_FAULTS))
    if unknown:
        raise ValueError(
            f"{KINDS_ENV}: fault kind(s) {unknown} unknown or not for {topology.describe()}; "
            f"known: {', '.join(known + AIRFLOW_FAULTS)}"
        )
    return tuple(wanted) or known + (AIRFLOW_FAULTS if with_airflow else ())


def fault_schedule(rng: random.Random, kinds: tuple[str, ...], count: int) -> list[str]:
    """``count`` fault kinds in random order, drawn in shuffled passes over ``kinds``: every
    kind comes once before any comes twice, so a run of ``len(kinds)`` faults or more
    covers every kind and longer runs stay balanced (counts differ by at most one)."""
    schedule: list[str] = []
    while len(schedule) < count:
        schedule += rng.sample(kinds, len(kinds))
    return schedule[:count]


def inject(
    case: Case, kind: str, rng: random.Random, tag: str, workdir: Path, rounds: SchedulerRounds
) -> str:
    """Inject one fault of ``kind`` (``rounds``: the Airflow home of the Airflow kinds);
    asserts and returns what was observed."""
    if kind in AIRFLOW_FAULTS:
        return inject_airflow_fault(case, kind, rng, tag, rounds)
    if kind in YARN_FAULTS:
        attempts = rng.choice((1, 2)) if kind == "yarn.am_kill9_mid_write" else None
        strike = inject_yarn_fault(case, kind, rng, tag, workdir, max_app_attempts=attempts)
        pinned = f"maxAppAttempts={attempts}: " if attempts else ""
        return pinned + check_strike(kind, strike)
    if kind in RESERVE_FAULTS:
        return _reserve_fault(case, kind, tag)
    case.recover(tag)
    summary = case.reserve(tag)
    assert summary is not None, "each round produces new records"
    epoch_id = int(summary["epoch_id"])
    if kind in WRITE_FAULTS or kind in TOPOLOGY_FAULTS:
        return _write_fault(case, kind, epoch_id, rng, tag, workdir)
    assert case.write(epoch_id) == 0
    return _commit_fault(case, kind, epoch_id, rng, tag, workdir)


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
    voted_before_kill = False
    if kind in TOPOLOGY_FAULTS:
        rc = inject_topology_fault(case, kind, epoch_id, rng, tag, workdir)
    elif kind in ("spark.after_last_batch", "spark.after_vote"):
        rc = case.write(epoch_id, faults=kind)
        assert rc != 0
    elif kind == "worker.sigkill_mid_write":
        rc = case.write(epoch_id, faults="spark.task.after_segment")
        assert rc == 4
    elif kind == "driver.sigkill_mid_write":
        proc = case.start_write(epoch_id)
        proc.wait_for_output("task start")  # the driver runs (or, its tasks done, has voted and ended)
        time.sleep(rng.uniform(0, 1.5))
        driver = proc.running_driver()
        if driver is not None:
            os.kill(driver, signal.SIGKILL)
        rc = proc.wait()
        # the tasks may all finish within the delay: a driver killed after its vote leaves WRITTEN
        voted_before_kill = rc != 0 and f"voted WRITTEN epoch_id={epoch_id} " in proc.output()
    elif kind == "broker.kill9_mid_write":
        proc = case.start_write(epoch_id)
        proc.wait_for_output("task start")
        time.sleep(rng.uniform(0, 1.0))
        case.stack.kill_and_restart("kafka")
        rc = proc.wait()
        assert rc in (0, 4), proc.output()[-3000:]  # 4: RangeReadError (no progress while it was down)
        assert case.topic_contents() == case.produced_contents()  # the log recovered every record
    elif kind == "broker.stall_during_write":
        proc = case.start_write(epoch_id)
        proc.wait_for_output("writing ranges=")
        with case.stack.broker_stalled():
            rc = proc.wait(180)
        assert rc in (0, 4), proc.output()[-3000:]  # 0: the tasks had read before the stall
    else:  # a service killed and restarted while the tasks write or stand after a segment
        service = SERVICE_KILLS_MID_WRITE[kind]
        release = workdir / f"release-{tag}"
        proc = case.start_write(epoch_id, faults="spark.task.after_segment:hang", **hang_env(120, release))
        proc.wait_for_output("task start")
        time.sleep(rng.uniform(0, 1.0))
        case.stack.kill_and_restart(service)
        release.touch()
        rc = proc.wait()
        assert rc in (0, 1, 4), proc.output()[-3000:]
    state = case.epoch(epoch_id).state
    voted = kind == "spark.after_vote" or rc == 0 or voted_before_kill
    assert state is (EpochState.WRITTEN if voted else EpochState.RESERVED), (kind, rc, state)
    return f"exit {rc}{' after its vote' if voted_before_kill else ''}, epoch {state.value}"


def _commit_fault(case: Case, kind: str, epoch_id: int, rng: random.Random, tag: str, workdir: Path) -> str:
    if kind == "broker.kill9_mid_commit":
        return _broker_kill_mid_commit(case, epoch_id, rng, tag, workdir)
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


def _broker_kill_mid_commit(case: Case, epoch_id: int, rng: random.Random, tag: str, workdir: Path) -> str:
    """kill -9 the broker while commit stands at a random side of publishing; release the
    commit before or after the restart (random). Before publishing + released while the
    broker is down: the publish fails (exit 1, WRITTEN, group untouched); otherwise the
    commit completes (exit 0, COMMITTED). Offsets published before the kill survive it."""
    point = rng.choice(("commit.before_publish", "commit.after_publish"))
    restart_first = rng.random() < 0.5
    release = workdir / f"release-{tag}"
    step = case.start_commit_held(epoch_id, tag, point, release)
    ends = case.epoch(epoch_id).end_offsets
    hook = EoKafkaHook()
    before = hook.committed_offsets(case.spec.group_id, list(ends))
    case.stack.kill("kafka")
    if restart_first:
        case.stack.restart("kafka")
    release.touch()
    result = step.result(60)
    if not restart_first:
        case.stack.restart("kafka")
    state = case.epoch(epoch_id).state
    group = hook.committed_offsets(case.spec.group_id, list(ends))
    if result.returncode == 0:
        assert (state, group) == (EpochState.COMMITTED, ends), (state, group, ends)
    else:
        assert result.returncode == 1, result.output[-2000:]
        assert "EoKafkaError: commit to group" in result.output, result.output[-2000:]
        assert point == "commit.before_publish" and state is EpochState.WRITTEN, (point, state)
        assert group == before, (group, before)  # nothing of this epoch published
    when = "after the restart" if restart_first else "while it was down"
    return f"at {point}, released {when}: commit exit {result.returncode}, epoch {state.value}"


def _restart_means(restarts: list[tuple[str, float]]) -> list[str]:
    by_service: dict[str, list[float]] = {}
    for service, seconds in restarts:
        by_service.setdefault(service, []).append(seconds)
    return [f"{s}: {len(v)} x {sum(v) / len(v):.1f}" for s, v in sorted(by_service.items())]


@dataclass
class Tally:
    """A randomized run so far: its RELIABILITY.md row, and faults and seconds by kind
    (a fault's seconds include the stream run after it)."""

    run: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    kinds: Counter[str] = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, kind: str, took: float, done: int) -> None:
        self.kinds[kind] += 1
        self.seconds[kind] = self.seconds.get(kind, 0.0) + took
        elapsed = time.monotonic() - self.started
        self.run.update(kinds=dict(self.kinds), duration_s=round(elapsed))
        self.run["per_fault_s"] = round(elapsed / done, 1)

    def means(self) -> str:
        return ", ".join(f"{k} {self.seconds[k] / self.kinds[k]:.1f}" for k in sorted(self.kinds))


def _inject_all(
    case: Case, schedule: list[str], rng: random.Random, workdir: Path, rounds: SchedulerRounds, tally: Tally
) -> None:
    """Each round of ``schedule``: new records, its fault, the next stream run (recover
    first, then one epoch), tallied."""
    budget = float(os.environ.get(BUDGET_ENV, "0") or 0)
    for i, kind in enumerate(schedule):
        if budget and time.monotonic() - tally.started > budget:
            print(f"{BUDGET_ENV}={budget:g} reached: {i} of {len(schedule)} faults ran", flush=True)
            tally.run["count"] = i
            return
        case.produce(rng.randint(10, 60), seed=rng.randrange(1_000_000))
        tally.run["outcome"] = f"FAIL at fault {i + 1} ({kind})"
        fault_started = time.monotonic()
        observed = inject(case, kind, rng, f"fault-{i}", workdir, rounds)
        case.run_epoch(f"recover-{i}")
        took = time.monotonic() - fault_started
        tally.add(kind, took, i + 1)
        total = tally.run["duration_s"]
        print(f"fault {i + 1}/{len(schedule)} {kind}: {observed}; {took:.0f} s (total {total} s)", flush=True)


#: What each variant's records are, as the randomized-runs table says it.
RECORD_SIZES = {False: reliability.SMALL_RECORDS, True: "40% of updates 100 KB to 1 MB"}


def test_randomized_faults(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any], random_runs: list[dict[str, Any]]
) -> None:
    if "EO_FAULT_RANDOM_COUNT" not in os.environ and os.environ.get(LONG_MODE_ENV) != "1":
        pytest.skip(
            "CI runs the big-records variant, whose schedule is this one's plus big records; "
            f"set EO_FAULT_RANDOM_COUNT or {LONG_MODE_ENV}=1 to run this one"
        )
    run_randomized(fault_stack, tmp_path, report, random_runs, big_records=False)


def test_randomized_faults_with_big_records(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any], random_runs: list[dict[str, Any]]
) -> None:
    run_randomized(fault_stack, tmp_path, report, random_runs, big_records=True)


def run_randomized(
    fault_stack: FaultStack,
    tmp_path: Path,
    report: dict[str, Any],
    random_runs: list[dict[str, Any]],
    *,
    big_records: bool,
) -> None:
    """One randomized run (see the module docstring); asserts every invariant at the end."""
    seed = int(os.environ.get("EO_FAULT_RANDOM_SEED", "20261122"))
    count = int(os.environ.get("EO_FAULT_RANDOM_COUNT", "2"))
    rng = random.Random(seed)
    # the Airflow kinds start Airflow's services each time (about 50 s): long runs only
    with_airflow = count > 2 or os.environ.get(LONG_MODE_ENV) == "1"
    schedule = fault_schedule(rng, fault_kinds(fault_stack.local.topology, with_airflow=with_airflow), count)
    row: dict[str, Any] = report if count <= 2 else {}  # long runs go to the randomized-runs table
    variant = ", big records" if big_records else ""
    row.update(
        order=15, fault=f"randomized{variant}: seed {seed}, {count} random faults across epochs (CI bound)"
    )
    if on_yarn():
        yarn_running(fault_stack)
    case = (yarn_case if on_yarn() else new_case)(
        fault_stack,
        tmp_path,
        "rand",
        partitions=3,
        records=90,
        cap=60,
        seed=seed % 1000,
        big_records=big_records,
        dead_letter_topic=True,
    )
    tally = Tally(
        {
            "seed": seed,
            "count": count,
            "outcome": "FAIL",
            "servers": reliability.servers_text(fault_stack.local.topology)
            + (", YARN cluster mode (Hadoop 3.5.0, 1 NodeManager)" if on_yarn() else ""),
            "record_sizes": RECORD_SIZES[big_records],
            **reliability_provenance.run_stamp(),  # commit, dirty, date, mode
        }
    )
    run = tally.run
    if count > 2:
        random_runs.append(run)  # recorded even when the run fails part-way (outcome says where)
    rounds = SchedulerRounds(fault_stack, tmp_path / "airflow")
    try:
        _inject_all(case, schedule, rng, tmp_path, rounds, tally)
    finally:
        rounds.close()
    print(  # -s: where the time goes
        f"mean seconds per fault by kind: {tally.means()}; restarts (service: count x mean s): "
        + ", ".join(_restart_means(fault_stack.restarts)),
        flush=True,
    )
    run["outcome"] = "FAIL draining or verifying"
    epochs = case.drain(max_epochs=count + 10)
    verification = case.verify()
    run.update(
        epochs=verification.epochs_committed,
        records=verification.records_produced,
        lost=sum(1 for p in verification.problems if "missing" in p or "cursor" in p),
        wrong=sum(1 for p in verification.problems if "unexpected" in p or "wrong" in p),
        duration_s=round(time.monotonic() - tally.started),
    )
    assert verification.problems == []
    run["outcome"] = "pass"
    row["observed"] = ", ".join(f"{k} x{v}" for k, v in sorted(tally.kinds.items()))
    row["recovery"] = f"direct: one stream run after each fault, then {epochs} epoch(s) drained"
    row["verified"] = _verified(verification) + "; each once on the 3-partition dead-letter topic, exact"
