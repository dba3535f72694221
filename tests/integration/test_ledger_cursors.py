"""Stored cursors (migration 0002, store/cursors.py): kept in the transactions that commit
a stream epoch or record a gap, filled from history by the migration, never moved back;
and the batched watermark path at hundreds of partitions (real PostgreSQL and Kafka)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg2
import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaError, EoKafkaHook
from airflow_provider_eo.ledger import EpochProtocol, EpochState, Ledger, PartitionRange
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.protocol.outcomes import Reserved
from airflow_provider_eo.ledger.store.cursors import advance_to_committed_ends
from airflow_provider_eo.ledger.store.migrate import apply_migrations, available_migrations
from eo_devtools.ledger_direct import reserve_backfill_epoch, reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, make_spec, ranges_of, run_epoch
from tests.kafka_helpers import RecordSender, delete_records_before, produce

pytestmark = pytest.mark.integration

TP = tuple[str, int]


def fill(stack: StackInfo, topic: str, partition: int, n: int) -> None:
    produce(stack.kafka_bootstrap, topic, [(f"k{i}", f"v{i}") for i in range(n)], partition=partition)


def stored(dsn: str, pipeline: str) -> dict[TP, tuple[int, int]]:
    """``(initial_offset, cursor_offset)`` per partition, read straight from eo.partitions."""
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            'SELECT topic, "partition", initial_offset, cursor_offset FROM eo.partitions WHERE pipeline = %s',
            (pipeline,),
        )
        rows = {(topic, part): (initial, cursor) for topic, part, initial, cursor in cur.fetchall()}
    conn.close()
    return rows


def test_cursor_moves_only_when_a_stream_epoch_commits(
    stack: StackInfo,
    ledger: Ledger,
    ledger_dsn: str,
    hook: EoKafkaHook,
    kafka_topic_factory: Callable[..., str],
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="cur")
    fill(stack, topic, 0, 5)
    fill(stack, topic, 1, 3)
    spec = make_spec(topics=[topic])
    epoch = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r1")
    assert epoch is not None
    assert stored(ledger_dsn, spec.name) == {(topic, 0): (0, 0), (topic, 1): (0, 0)}
    ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
    assert ledger.cursors(spec.name) == {(topic, 0): 0, (topic, 1): 0}
    assert ledger.mark_committed(epoch.epoch_id).state is EpochState.COMMITTED
    assert stored(ledger_dsn, spec.name) == {(topic, 0): (0, 5), (topic, 1): (0, 3)}
    assert ledger.mark_committed(epoch.epoch_id).state is EpochState.COMMITTED  # no-op
    assert ledger.cursors(spec.name) == {(topic, 0): 5, (topic, 1): 3}

    fill(stack, topic, 0, 2)
    aborted = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r2")
    assert aborted is not None and ranges_of(aborted) == [(topic, 0, 5, 7), (topic, 1, 3, 3)]
    ledger.abort(aborted.epoch_id, "test")
    backfill = reserve_backfill_epoch(ledger, spec, [PartitionRange(topic, 0, 0, 7)], dag_id="b", run_id="b1")
    ledger.vote_written(backfill.epoch_id, backfill.fencing_token, {})
    ledger.mark_committed(backfill.epoch_id)
    assert stored(ledger_dsn, spec.name) == {(topic, 0): (0, 5), (topic, 1): (0, 3)}
    assert ranges_of(run_epoch(ledger, spec, hook, "r3")) == [(topic, 0, 5, 7), (topic, 1, 3, 3)]
    assert ledger.cursors(spec.name) == {(topic, 0): 7, (topic, 1): 3}


def test_cursor_never_moves_backwards(
    stack: StackInfo,
    ledger: Ledger,
    ledger_dsn: str,
    hook: EoKafkaHook,
    kafka_topic_factory: Callable[..., str],
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="cur-back")
    fill(stack, topic, 0, 4)
    spec = make_spec(topics=[topic])
    first = run_epoch(ledger, spec, hook, "r1")
    fill(stack, topic, 0, 3)
    assert ranges_of(run_epoch(ledger, spec, hook, "r2")) == [(topic, 0, 4, 7)]
    assert first is not None
    with psycopg2.connect(ledger_dsn) as conn, conn.cursor() as cur:
        assert advance_to_committed_ends(cur, first.epoch_id) == 0  # its end, 4, is behind 7
    conn.close()
    assert stored(ledger_dsn, spec.name) == {(topic, 0): (0, 7)}


def test_recorded_gap_moves_the_cursor_in_the_reservation(
    stack: StackInfo,
    ledger: Ledger,
    ledger_dsn: str,
    hook: EoKafkaHook,
    kafka_topic_factory: Callable[..., str],
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="cur-gap")
    fill(stack, topic, 0, 5)
    fill(stack, topic, 1, 1)
    spec = make_spec(topics=[topic], on_data_loss="record_gap")
    assert ranges_of(run_epoch(ledger, spec, hook, "r1")) == [(topic, 0, 0, 5), (topic, 1, 0, 1)]
    fill(stack, topic, 0, 5)
    assert delete_records_before(stack.kafka_bootstrap, topic, 0, 8) == 8
    epoch = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r2")
    assert epoch is not None and ranges_of(epoch) == [(topic, 0, 8, 10), (topic, 1, 1, 1)]
    # the gap [5, 8) is recorded and passed over in the reserving transaction itself
    assert stored(ledger_dsn, spec.name) == {(topic, 0): (0, 8), (topic, 1): (0, 1)}
    ledger.abort(epoch.epoch_id, "test")  # the lost offsets stay lost; [8, 10) is read again
    assert ledger.cursors(spec.name) == {(topic, 0): 8, (topic, 1): 1}
    assert ranges_of(run_epoch(ledger, spec, hook, "r3")) == [(topic, 0, 8, 10), (topic, 1, 1, 1)]
    assert [(g["start"], g["end"], g["epoch_id"]) for g in ledger.gaps(spec.name)] == [(5, 8, epoch.epoch_id)]
    assert ledger.cursors(spec.name) == {(topic, 0): 10, (topic, 1): 1}


# History written by hand under schema 0001: the migration must derive each cursor from it.
HISTORY_0001 = """
INSERT INTO eo.pipelines (name) VALUES ('p'), ('q');
INSERT INTO eo.partitions (pipeline, topic, "partition", initial_offset, initial_source) VALUES
    ('p', 't', 0, 0, 'earliest'),   -- committed stream ranges end at 9
    ('p', 't', 1, 3, 'group'),      -- a gap ends at 12, beyond its committed end 6
    ('p', 't', 2, 50, 'latest'),    -- only aborted, open and backfill ranges: stays at 50
    ('p', 'u', 0, 0, 'earliest'),   -- never read
    ('q', 't', 0, 2, 'earliest');   -- another pipeline's committed end 4 on the same partition
INSERT INTO eo.epochs (epoch_id, pipeline, kind, state, fencing_token, dag_id, run_id,
                       written_at, committed_at, aborted_at) VALUES
    (1, 'p', 'stream',   'COMMITTED', gen_random_uuid(), 'd', 'r1', now(), now(), NULL),
    (2, 'p', 'stream',   'COMMITTED', gen_random_uuid(), 'd', 'r2', now(), now(), NULL),
    (3, 'p', 'stream',   'ABORTED',   gen_random_uuid(), 'd', 'r3', NULL, NULL, now()),
    (4, 'p', 'backfill', 'COMMITTED', gen_random_uuid(), 'b', 'b1', now(), now(), NULL),
    (5, 'p', 'stream',   'RESERVED',  gen_random_uuid(), 'd', 'r5', NULL, NULL, NULL),
    (6, 'q', 'stream',   'COMMITTED', gen_random_uuid(), 'd', 'r1', now(), now(), NULL);
INSERT INTO eo.epoch_ranges (epoch_id, topic, "partition", start_offset, end_offset) VALUES
    (1, 't', 0, 0, 4), (1, 't', 1, 3, 6), (1, 't', 2, 50, 50),
    (2, 't', 0, 4, 9), (2, 't', 1, 6, 6), (2, 't', 2, 50, 50),
    (3, 't', 0, 9, 20), (3, 't', 2, 50, 70),
    (4, 't', 2, 0, 90),
    (5, 't', 0, 9, 30), (5, 't', 1, 12, 15), (5, 't', 2, 50, 80),
    (6, 't', 0, 2, 4);
INSERT INTO eo.gaps (pipeline, topic, "partition", start_offset, end_offset, epoch_id, reason) VALUES
    ('p', 't', 1, 6, 12, 5, 'retention');
"""


def test_migration_fills_cursors_from_history(stack: StackInfo) -> None:
    with fresh_database(stack.ledger_dsn) as dsn:
        conn = psycopg2.connect(dsn)
        try:
            initial = available_migrations()[0]
            assert (initial.version, initial.name) == (1, "initial")
            with conn.cursor() as cur:
                cur.execute("CREATE SCHEMA eo")
                cur.execute(
                    "CREATE TABLE eo.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                )
                cur.execute(initial.sql)
                cur.execute("INSERT INTO eo.schema_migrations (version, name) VALUES (1, 'initial')")
                cur.execute(HISTORY_0001)
            conn.commit()
            assert apply_migrations(conn) == [2, 3, 4, 5, 6, 7]
        finally:
            conn.close()
        assert stored(dsn, "p") == {
            ("t", 0): (0, 9),
            ("t", 1): (3, 12),
            ("t", 2): (50, 50),
            ("u", 0): (0, 0),
        }
        assert stored(dsn, "q") == {("t", 0): (2, 4)}
        with Ledger(dsn) as ledger:
            assert ledger.cursors("p") == {("t", 0): 9, ("t", 1): 12, ("t", 2): 50, ("u", 0): 0}
            # from here on the store keeps them: committing epoch 5 raises each to its range end
            epoch = ledger.get_epoch(5)
            ledger.vote_written(5, epoch.fencing_token, {})
            ledger.mark_committed(5)
            assert ledger.cursors("p") == {("t", 0): 30, ("t", 1): 15, ("t", 2): 80, ("u", 0): 0}
            assert ledger.cursors("q") == {("t", 0): 4}


def test_hundreds_of_partitions_reserve_and_commit_exact_ranges(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    partitions = 300
    topic = kafka_topic_factory(partitions=partitions, prefix="cur-many")
    counts = {p: 1 + p % 3 for p in range(partitions)}
    sender = RecordSender(stack.kafka_bootstrap)
    for p, n in counts.items():
        for i in range(n):
            sender.send(topic, f"k{p}-{i}", "v", partition=p)
    sender.flush()
    tps = [(topic, p) for p in range(partitions)]
    assert hook.watermarks(reversed(tps)) == {(topic, p): (0, counts[p]) for p in range(partitions)}

    spec = make_spec(topics=[topic])
    protocol = EpochProtocol(ledger, kafka=lambda: hook)
    reserved = protocol.reserve_stream(spec, RunIdentity("d", "r1"))
    assert isinstance(reserved, Reserved)
    assert ranges_of(reserved.epoch) == [(topic, p, 0, counts[p]) for p in range(partitions)]
    ledger.vote_written(reserved.epoch.epoch_id, reserved.epoch.fencing_token, {})
    committed = protocol.commit(reserved.epoch.epoch_id, pipeline=spec)
    assert committed.published == {(topic, p): counts[p] for p in range(partitions)}
    assert ledger.cursors(spec.name) == committed.published
    assert hook.committed_offsets(spec.group_id, tps) == committed.published

    fill(stack, topic, 7, 2)
    fill(stack, topic, 299, 1)
    second = protocol.reserve_stream(spec, RunIdentity("d", "r2"))
    assert isinstance(second, Reserved)
    assert [r for r in ranges_of(second.epoch) if r[2] != r[3]] == [(topic, 7, 2, 4), (topic, 299, 3, 4)]
    assert [r[2] for r in ranges_of(second.epoch)] == [counts[p] for p in range(partitions)]


def test_watermarks_error_names_the_partition(
    hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="cur-wm")
    assert hook.watermarks([(topic, 1), (topic, 0)]) == {(topic, 0): (0, 0), (topic, 1): (0, 0)}
    with pytest.raises(EoKafkaError, match=rf"^watermarks of {topic}\[5\]: "):
        hook.watermarks([(topic, 0), (topic, 5)])
