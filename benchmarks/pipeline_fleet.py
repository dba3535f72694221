"""Many pipelines reserving and committing at once on one ledger: the concurrent driver of
the ``many_pipelines`` benchmark section and of tests/integration/test_many_pipelines.py.

:func:`run_fleet` forks ``processes`` workers (like Airflow's workers, each with its own
ledger connection; the parent must hold no live Kafka client then: librdkafka is not
fork-safe); worker ``k`` drives the pipelines ``specs[k::processes]``, round by
round: every round it runs one epoch of each of its pipelines, as the operators do it,
through the real protocol: ``EpochProtocol.reserve_stream`` with a fresh ``EoKafkaHook``
(the broker's metadata and watermarks), the writer's vote (``Ledger.vote_written``, the
Spark write itself left out), then ``EpochProtocol.commit`` with another fresh hook (the
group's offsets, then COMMITTED). One pipeline is only ever driven by one worker at a time
(a DAG's ``max_active_runs=1``); the workers' pipelines differ, so all contention is the
ledger's own (shared tables, indexes, sequence, WAL).

A transaction the server rolls back as a serialization failure (SQLSTATE 40001) or a
deadlock victim (40P01) would reach the driver as ``TransactionRollbackError``: the driver
counts it by SQLSTATE and retries the step (the task's retry), so the run's figures and
the ledger's end state stay whole, and the count says it happened.
"""

from __future__ import annotations

import faulthandler
import gc
import logging
import multiprocessing
import os
import time
import traceback
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from queue import Empty
from typing import Any

from psycopg2.extensions import TransactionRollbackError

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.ledger import EpochProtocol, Ledger
from airflow_provider_eo.ledger.outcomes import Reserved
from airflow_provider_eo.ledger.recovery_plan import RunIdentity
from benchmarks.reserve_commit import TimedHook

DAG_ID = "fleet"
RETRIES = 5  # attempts of a step whose transaction is rolled back (40001/40P01) before giving up


@dataclass(frozen=True)
class Fleet:
    """What to run: ``epochs`` epochs of each of ``specs`` from ``processes`` workers on
    the ledger at ``dsn``; ``conn_env`` holds the ``AIRFLOW_CONN_*`` variables of the
    Kafka connection the hooks resolve."""

    dsn: str
    conn_env: Mapping[str, str]
    specs: Sequence[PipelineSpec]
    epochs: int
    processes: int


@dataclass(frozen=True)
class EpochSample:
    """One epoch: its id, round, and the wall ms of its reserve and commit, with the
    broker's share of each (the hooks' outermost calls)."""

    pipeline: str
    epoch_id: int
    round: int
    reserve_ms: float
    reserve_broker_ms: float
    commit_ms: float
    commit_broker_ms: float
    calls: dict[str, float] = field(default_factory=dict)  # broker call -> ms ("reserve.watermarks")

    @property
    def total_ms(self) -> float:
        """Reserve + commit (the vote between them not counted)."""
        return self.reserve_ms + self.commit_ms


@dataclass
class FleetResult:
    """Every epoch's sample, the wall time from the start barrier to the last worker's
    end, and the rolled-back transactions the driver retried, by SQLSTATE."""

    samples: list[EpochSample]
    wall_s: float
    rollbacks: dict[str, int] = field(default_factory=dict)

    @property
    def retries(self) -> int:
        """How many steps were retried (0: no transaction was rolled back)."""
        return sum(self.rollbacks.values())


class CallTimedHook(TimedHook):
    """:class:`TimedHook` that also keeps each broker call's ms by name (where a tail is)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, float] = {}

    def _call(self, name: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            self.calls[name] = self.calls.get(name, 0.0) + (time.perf_counter() - started) * 1000

    def list_partitions(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("list_partitions", super().list_partitions, *args, **kwargs)

    def watermarks(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("watermarks", super().watermarks, *args, **kwargs)

    def committed_offsets(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("committed_offsets", super().committed_offsets, *args, **kwargs)

    def commit_offsets(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("commit_offsets", super().commit_offsets, *args, **kwargs)


def run_fleet(fleet: Fleet, timeout_s: float = 1800) -> FleetResult:
    """Run ``fleet``; raises ``RuntimeError`` with a worker's traceback if one failed."""
    context = multiprocessing.get_context("fork")
    gc.collect()  # no librdkafka client of this process may live on in the children
    barrier = context.Barrier(fleet.processes + 1, timeout=300)
    queue = context.Queue()
    workers = [
        context.Process(target=_worker, args=(fleet, index, barrier, queue), name=f"fleet-{index}")
        for index in range(fleet.processes)
    ]
    for process in workers:
        process.start()
    try:
        barrier.wait()  # every worker connected and migrated: start together
        started = time.perf_counter()
        reports = _collect(queue, workers, timeout_s)
        wall_s = time.perf_counter() - started
    finally:
        for process in workers:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()
    failed = [report["error"] for report in reports if "error" in report]
    if failed:
        raise RuntimeError("fleet worker failed:\n" + "\n".join(failed))
    rollbacks: Counter[str] = Counter()
    for report in reports:
        rollbacks.update(report["rollbacks"])
    samples = [sample for report in reports for sample in report["samples"]]
    return FleetResult(samples, wall_s, dict(rollbacks))


def _collect(queue: Any, workers: list[Any], timeout_s: float) -> list[dict[str, Any]]:
    """Every worker's report; a worker that exits without one (a crash) is an error
    report naming its exit code."""
    reports: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while len(reports) < len(workers):
        try:
            reports.append(queue.get(timeout=1))
            continue
        except Empty:
            pass
        if all(not process.is_alive() for process in workers):
            with suppress(Empty):  # a report still in the pipe
                while True:
                    reports.append(queue.get(timeout=5))
            if len(reports) < len(workers):
                codes = {process.name: process.exitcode for process in workers}
                reports.append(
                    {"error": f"{len(workers) - len(reports)} worker(s) exited without a report: {codes}"}
                )
            return reports
        if time.monotonic() > deadline:
            raise TimeoutError(f"fleet not done within {timeout_s:g} s ({len(reports)} reports)")
    return reports


def _worker(fleet: Fleet, index: int, barrier: Any, queue: Any) -> None:
    """One worker process: its pipelines' epochs, round by round; reports through ``queue``."""
    faulthandler.enable()  # a crash in a native library prints where it happened
    os.environ.update(fleet.conn_env)
    rollbacks: Counter[str] = Counter()
    try:
        _ = TimedHook().settings  # configures Airflow's logging in this process: then quiet it
        for name in ("airflow_provider_eo", "airflow.task.hooks"):  # per-epoch log lines
            logging.getLogger(name).setLevel(logging.WARNING)
        with Ledger(fleet.dsn) as ledger:
            ledger.migrate()
            barrier.wait()
            samples = [
                _epoch(ledger, spec, round_no, rollbacks)
                for round_no in range(fleet.epochs)
                for spec in fleet.specs[index :: fleet.processes]
            ]
        queue.put({"samples": samples, "rollbacks": dict(rollbacks)})
    except BaseException:
        queue.put({"error": f"worker {index}: {traceback.format_exc()}"})


def _epoch(ledger: Ledger, spec: PipelineSpec, round_no: int, rollbacks: Counter[str]) -> EpochSample:
    """Reserve, vote and commit one epoch of ``spec`` as the operators do (a fresh
    protocol and hook for the reserve and for the commit)."""
    run = RunIdentity(DAG_ID, f"{spec.name}-{round_no}")
    reserving = CallTimedHook()
    _ = reserving.settings  # the Airflow connection lookup is task start-up, not measured
    started = time.perf_counter()
    outcome = _retried(
        rollbacks, lambda: EpochProtocol(ledger, kafka=lambda: reserving).reserve_stream(spec, run)
    )
    reserve_ms = (time.perf_counter() - started) * 1000
    if not isinstance(outcome, Reserved):
        raise RuntimeError(f"{spec.name} round {round_no}: nothing reserved ({outcome})")
    epoch = outcome.epoch
    _retried(rollbacks, lambda: ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {}))
    committing = CallTimedHook()
    _ = committing.settings
    started = time.perf_counter()
    _retried(
        rollbacks,
        lambda: EpochProtocol(ledger, kafka=lambda: committing).commit(
            epoch.epoch_id, group_id=spec.group_id
        ),
    )
    commit_ms = (time.perf_counter() - started) * 1000
    calls = {f"reserve.{name}": ms for name, ms in reserving.calls.items()}
    calls.update({f"commit.{name}": ms for name, ms in committing.calls.items()})
    return EpochSample(
        spec.name,
        epoch.epoch_id,
        round_no,
        reserve_ms,
        reserving.broker_ms,
        commit_ms,
        committing.broker_ms,
        {name: round(ms, 1) for name, ms in calls.items()},
    )


def _retried(rollbacks: Counter[str], step: Any) -> Any:
    """``step()``, again (up to :data:`RETRIES` times) when the server rolled its
    transaction back (40001 serialization failure, 40P01 deadlock), each counted."""
    for attempt in range(1, RETRIES + 1):
        try:
            return step()
        except TransactionRollbackError as exc:
            rollbacks[exc.pgcode or "40000"] += 1
            if attempt == RETRIES:
                raise
            time.sleep(0.01 * attempt)
    raise AssertionError("unreachable")
