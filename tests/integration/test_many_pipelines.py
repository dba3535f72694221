"""Many pipelines reserving and committing at once on one ledger (issue 25).

The ``many_pipelines`` benchmark's driver (benchmarks/pipeline_fleet.py), small: 10
pipelines of 4 partitions each (a topic each, 3 records per partition), 3 epochs each,
from 4 processes through the real protocol and ``EoKafkaHook``. Afterwards the ledger
holds exactly 30 epochs, all COMMITTED; per pipeline and partition the committed ranges
tile ``[0, 3)`` one record per epoch without overlap; every cursor is the end of its last
committed range, and the consumer group holds the same offsets. The driver's count of
rolled-back transactions (serialization failures, deadlocks) is reported and is 0. (A
worker that crashes is replaced by the driver, as Airflow retries a task; the ledger's end
state must be the same either way.)
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import psycopg2
import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochKind, EpochState, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from benchmarks.fleet_epoch import retried
from benchmarks.fleet_topics import FleetTopics, fleet_topics
from benchmarks.many_pipelines import ledger_invariants
from benchmarks.pipeline_fleet import Fleet, FleetResult, run_fleet
from tests.conftest import StackInfo
from tests.integration.ledger_support import assert_contiguous

pytestmark = pytest.mark.integration

PIPELINES, PARTITIONS, PROCESSES, EPOCHS = 10, 4, 4, 3


@pytest.fixture(scope="module")
def topics(stack: StackInfo) -> Iterator[FleetTopics]:
    with fleet_topics(stack.kafka_bootstrap, PIPELINES, PARTITIONS, records=EPOCHS, prefix="fleet") as made:
        yield made


@pytest.fixture(scope="module")
def fleet_run(stack: StackInfo, ledger_dsn: str, topics: FleetTopics) -> FleetResult:
    return run_fleet(Fleet(ledger_dsn, stack.conn_env, topics.specs, EPOCHS, PROCESSES), timeout_s=300)


def test_every_epoch_of_every_pipeline_is_committed_once(
    fleet_run: FleetResult, ledger: Ledger, topics: FleetTopics
) -> None:
    assert fleet_run.rollbacks == {}
    assert fleet_run.retries == 0
    assert len(fleet_run.samples) == PIPELINES * EPOCHS
    assert len({s.epoch_id for s in fleet_run.samples}) == PIPELINES * EPOCHS
    epochs = ledger.epochs(EpochFilter(pipelines=frozenset(s.name for s in topics.specs)))
    assert len(epochs) == PIPELINES * EPOCHS
    assert {e.state for e in epochs} == {EpochState.COMMITTED}
    assert {e.kind for e in epochs} == {EpochKind.STREAM}
    assert sorted(e.epoch_id for e in epochs) == sorted(s.epoch_id for s in fleet_run.samples)


def test_ranges_tile_each_partition_and_cursors_are_exact(
    fleet_run: FleetResult, ledger: Ledger, ledger_dsn: str, topics: FleetTopics, hook: EoKafkaHook
) -> None:
    for spec in topics.specs:
        epochs = ledger.epochs(EpochFilter(pipeline=spec.name))
        assert len(epochs) == EPOCHS
        topic = spec.topics[0]
        expected = {(topic, partition): EPOCHS for partition in range(PARTITIONS)}
        for epoch in epochs:  # one record per partition per epoch
            assert sorted((r.topic, r.partition, r.record_count) for r in epoch.ranges) == [
                (topic, partition, 1) for partition in range(PARTITIONS)
            ]
        cursors = ledger.cursors(spec.name)
        assert cursors == expected
        assert_contiguous(epochs, cursors)  # no overlap, no hole, ends at the cursor
        assert hook.committed_offsets(spec.group_id, list(expected)) == expected
    assert ledger_invariants(ledger_dsn) == {
        "committed": PIPELINES * EPOCHS,
        "not_committed": 0,
        "overlapping_ranges": 0,
        "cursor_mismatches": 0,
    }


def test_a_deadlock_victim_is_retried_and_counted(ledger_dsn: str) -> None:
    """The driver's retry of a rolled-back transaction, on a real deadlock: the victim's
    step runs again and ``40P01`` is counted once (PostgreSQL picks the backend whose
    ``deadlock_timeout`` ends first: the one that started waiting first)."""
    with psycopg2.connect(ledger_dsn) as setup, setup.cursor() as cur:
        cur.execute("CREATE TABLE fleet_deadlock (id int PRIMARY KEY, n int NOT NULL)")
        cur.execute("INSERT INTO fleet_deadlock VALUES (1, 0), (2, 0)")
    holder, victim = psycopg2.connect(ledger_dsn), psycopg2.connect(ledger_dsn)
    victim_waits = threading.Event()
    try:
        holder_cur = holder.cursor()
        holder_cur.execute("UPDATE fleet_deadlock SET n = n + 1 WHERE id = 1")

        def holder_closes_the_cycle() -> None:
            victim_waits.wait(10)
            time.sleep(0.5)  # the victim waits first, so its deadlock check runs first
            holder_cur.execute("UPDATE fleet_deadlock SET n = n + 1 WHERE id = 2")
            holder.commit()

        closer = threading.Thread(target=holder_closes_the_cycle)
        closer.start()

        def step() -> None:
            with victim, victim.cursor() as cur:  # commits, or rolls back on the error
                cur.execute("UPDATE fleet_deadlock SET n = n + 10 WHERE id = 2")
                victim_waits.set()
                cur.execute("UPDATE fleet_deadlock SET n = n + 10 WHERE id = 1")

        rollbacks: Counter[str] = Counter()
        retried(rollbacks, step)
        closer.join(10)
        assert rollbacks == {"40P01": 1}
        with victim, victim.cursor() as cur:
            cur.execute("SELECT id, n FROM fleet_deadlock ORDER BY id")
            assert cur.fetchall() == [(1, 11), (2, 11)]
    finally:
        holder.close()
        victim.close()
