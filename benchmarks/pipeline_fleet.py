"""Many pipelines reserving and committing at once on one ledger: the concurrent driver of
the ``many_pipelines`` benchmark section and of tests/integration/test_many_pipelines.py.

:func:`run_fleet` forks ``processes`` workers (like Airflow's workers, each with its own
ledger connection; the parent holds no live Kafka client then: librdkafka is not
fork-safe). Worker ``k`` drives the pipelines ``specs[k::processes]``, round by round:
every round one epoch of each of its pipelines (:func:`benchmarks.fleet_epoch.run_epoch`,
the real protocol with the operators' ``EoKafkaHook``). One pipeline is only ever driven
by one worker at a time (a DAG's ``max_active_runs=1``); the workers' pipelines differ,
so all contention is the ledger's own (shared tables, indexes, sequence, WAL).

A worker that dies (librdkafka 2.16's ``AdminClient.list_offsets`` segfaulted about once
in 2,000 reservations under load here) is replaced as Airflow retries a task: a new
process resumes at the epoch it was in (``reserve_stream`` gives the same run its open
epoch back); ``crashes`` counts them. Rolled-back transactions retried by the epoch
(serialization failures, deadlocks) are counted by SQLSTATE in ``rollbacks``.
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
from dataclasses import dataclass, field
from queue import Empty
from typing import Any

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.ledger import Ledger
from benchmarks.fleet_epoch import CallTimedHook, EpochSample, run_epoch

MAX_CRASHES = 10  # replacements of crashed workers before the run gives up


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


@dataclass
class FleetResult:
    """Every epoch's sample, the wall time from the start barrier to the last worker's
    end, the rolled-back transactions retried (by SQLSTATE) and the workers that crashed
    and were replaced (by exit code)."""

    samples: list[EpochSample]
    wall_s: float
    rollbacks: dict[str, int] = field(default_factory=dict)
    crashes: dict[str, int] = field(default_factory=dict)

    @property
    def retries(self) -> int:
        """How many steps were retried (0: no transaction was rolled back)."""
        return sum(self.rollbacks.values())


def run_fleet(fleet: Fleet, timeout_s: float = 1800) -> FleetResult:
    """Run ``fleet``; raises ``RuntimeError`` with a worker's traceback if one failed, or
    when workers crashed more than :data:`MAX_CRASHES` times."""
    context = multiprocessing.get_context("fork")
    gc.collect()  # no librdkafka client of this process may live on in the children
    barrier = context.Barrier(fleet.processes + 1, timeout=300)
    queue = context.Queue()

    def start(index: int, skip: int, wait: Any) -> Any:
        process = context.Process(
            target=_worker, args=(fleet, index, skip, wait, queue), name=f"fleet-{index}"
        )
        process.start()
        return process

    workers = {index: start(index, 0, barrier) for index in range(fleet.processes)}
    done: Counter[int] = Counter()  # epochs reported per worker index
    finished: set[int] = set()
    samples: list[EpochSample] = []
    rollbacks: Counter[str] = Counter()
    crashes: Counter[str] = Counter()
    try:
        barrier.wait()  # every worker connected and migrated: start together
        started = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        while len(finished) < fleet.processes:
            try:
                kind, index, payload = queue.get(timeout=1)
            except Empty:
                for index, process in workers.items():
                    if index in finished or process.is_alive():
                        continue
                    crashes[str(process.exitcode)] += 1
                    if sum(crashes.values()) > MAX_CRASHES:
                        raise RuntimeError(f"fleet workers crashed {dict(crashes)}") from None
                    workers[index] = start(index, done[index], None)  # the task's retry
                if time.monotonic() > deadline:
                    raise TimeoutError(f"fleet not done within {timeout_s:g} s") from None
                continue
            if kind == "sample":
                sample, rolled_back = payload
                samples.append(sample)
                rollbacks.update(rolled_back)
                done[index] += 1
            elif kind == "done":
                finished.add(index)
            else:
                raise RuntimeError(f"fleet worker {index} failed:\n{payload}")
        wall_s = time.perf_counter() - started
    finally:
        for process in workers.values():
            process.join(timeout=60)
            if process.is_alive():
                process.kill()
    return FleetResult(samples, wall_s, dict(rollbacks), dict(crashes))


def _worker(fleet: Fleet, index: int, skip: int, barrier: Any, queue: Any) -> None:
    """Worker ``index``: its pipelines' epochs round by round, the first ``skip`` left
    out (done by the process it replaces); each epoch reported as it ends."""
    faulthandler.enable()  # a crash in a native library prints where it happened
    os.environ.update(fleet.conn_env)
    try:
        _ = CallTimedHook().settings  # configures Airflow's logging in this process: then quiet it
        for name in ("airflow_provider_eo", "airflow.task.hooks"):  # per-epoch log lines
            logging.getLogger(name).setLevel(logging.WARNING)
        work = [
            (round_no, spec)
            for round_no in range(fleet.epochs)
            for spec in fleet.specs[index :: fleet.processes]
        ]
        with Ledger(fleet.dsn) as ledger:
            ledger.migrate()
            if barrier is not None:
                barrier.wait()
            for round_no, spec in work[skip:]:
                rollbacks: Counter[str] = Counter()
                sample = run_epoch(ledger, spec, round_no, rollbacks)
                queue.put(("sample", index, (sample, dict(rollbacks))))
        queue.put(("done", index, None))
    except BaseException:
        queue.put(("error", index, traceback.format_exc()))
