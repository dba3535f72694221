"""Two reservers racing (threads and separate processes) never both open a stream epoch.

They reserve through the real ``EoKafkaHook`` on one real topic that nobody writes to
after the module fills it: its watermarks stay put, so every round races for the same
offsets and only the ledger's serialization decides the winner.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochKind, EpochState, Ledger, OpenEpochConflict
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from eo_devtools.ledger_direct import reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import assert_contiguous, make_spec
from tests.kafka_helpers import created_topic, produce

pytestmark = pytest.mark.integration
ROUNDS = 50


@pytest.fixture(scope="module")
def topic(stack: StackInfo) -> Iterator[str]:
    """Two partitions of 1000 records each, written once before the races."""
    with created_topic(stack.kafka_bootstrap, partitions=2, prefix="race") as name:
        for partition in (0, 1):
            produce(stack.kafka_bootstrap, name, [(f"k{i}", "{}") for i in range(1000)], partition=partition)
        yield name


def run_id_for(round_no: int, worker: int) -> str:
    """Every fifth round both reservers belong to the same DAG run (a retry racing itself)."""
    return f"same-{round_no}" if round_no % 5 == 0 else f"run-{round_no}-{worker}"


def attempt(
    ledger: Ledger, spec: PipelineSpec, hook: EoKafkaHook, round_no: int, worker: int
) -> tuple[Any, ...]:
    run_id = run_id_for(round_no, worker)
    try:
        epoch = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id=run_id)
    except OpenEpochConflict as exc:
        return (round_no, worker, "conflict", exc.epoch_id, exc.run_id)
    assert epoch is not None
    return (round_no, worker, "epoch", epoch.epoch_id, epoch.run_id)


def check_rounds(results: list[tuple[Any, ...]], ledger: Ledger, pipeline: str) -> None:
    by_round: dict[int, list[tuple[Any, ...]]] = {}
    for result in results:
        by_round.setdefault(result[0], []).append(result)
    assert sorted(by_round) == list(range(ROUNDS))
    epochs = ledger.epochs(EpochFilter(pipeline=pipeline, kind=EpochKind.STREAM))
    assert len(epochs) == ROUNDS  # exactly one epoch per round, never two
    for round_no, pair in by_round.items():
        kinds = sorted(outcome[2] for outcome in pair)
        ids = {outcome[3] for outcome in pair}
        assert len(ids) == 1, pair  # the loser names the winner's epoch
        if round_no % 5 == 0:
            assert kinds == ["epoch", "epoch"], pair
        else:
            assert kinds == ["conflict", "epoch"], pair
            winner = next(outcome for outcome in pair if outcome[2] == "epoch")
            loser = next(outcome for outcome in pair if outcome[2] == "conflict")
            assert loser[4] == winner[4]


def test_threads_racing_never_both_reserve(ledger_dsn: str, hook: EoKafkaHook, topic: str) -> None:
    spec = make_spec(topics=[topic], total=5)
    local = threading.local()
    barrier = threading.Barrier(2, timeout=60)

    def contend(round_no: int, worker: int) -> tuple[Any, ...]:
        if not hasattr(local, "ledger"):
            local.ledger = Ledger(ledger_dsn)
        barrier.wait()
        return attempt(local.ledger, spec, hook, round_no, worker)

    results: list[tuple[Any, ...]] = []
    with Ledger(ledger_dsn) as ledger, ThreadPoolExecutor(max_workers=2) as pool:
        for round_no in range(ROUNDS):
            futures = [pool.submit(contend, round_no, worker) for worker in (0, 1)]
            results.extend(future.result(timeout=60) for future in futures)
            for epoch in ledger.open_epochs(spec.name, EpochKind.STREAM):
                ledger.abort(epoch.epoch_id, "race round over")
        check_rounds(results, ledger, spec.name)
        assert {e.state for e in ledger.epochs(EpochFilter(pipeline=spec.name))} == {EpochState.ABORTED}


def process_worker(
    dsn: str, spec: PipelineSpec, hook: EoKafkaHook, worker: int, barrier: Any, results: Any
) -> None:
    """One reserver process: every round, reserve at the barrier; worker 0 then commits the winner.
    ``hook`` is inherited through fork with its connection already resolved; it opens its
    own Kafka clients in this process."""
    with Ledger(dsn) as ledger:
        for round_no in range(ROUNDS):
            barrier.wait()
            results.put(attempt(ledger, spec, hook, round_no, worker))
            barrier.wait()
            if worker == 0:
                for epoch in ledger.open_epochs(spec.name, EpochKind.STREAM):
                    ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
                    ledger.mark_committed(epoch.epoch_id)
            barrier.wait()


def test_processes_racing_never_both_reserve(ledger_dsn: str, hook: EoKafkaHook, topic: str) -> None:
    spec = make_spec(topics=[topic], total=5)
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2, timeout=60)
    queue = context.Queue()
    workers = [
        context.Process(target=process_worker, args=(ledger_dsn, spec, hook, worker, barrier, queue))
        for worker in (0, 1)
    ]
    for process in workers:
        process.start()
    results = [queue.get(timeout=120) for _ in range(2 * ROUNDS)]
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    with Ledger(ledger_dsn) as ledger:
        check_rounds(results, ledger, spec.name)
        committed = ledger.epochs(EpochFilter(pipeline=spec.name, states=frozenset({EpochState.COMMITTED})))
        assert len(committed) == ROUNDS
        # 5 records per epoch, split 3/2 then 2/3 ... contiguous from 0 to the cursor
        cursors = ledger.cursors(spec.name)
        assert sum(cursors.values()) == 5 * ROUNDS
        assert_contiguous(committed, cursors)
