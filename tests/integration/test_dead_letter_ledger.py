"""The ledger side of the dead-letter topic (real PostgreSQL): ``publish_seq`` numbering at
commit (consecutive, per pipeline, in commit order, once) and the upsert's zombie rule."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from airflow_provider_eo.ledger import Epoch, Ledger, PartitionRange
from airflow_provider_eo.ledger.model.epoch import DeadLetter
from airflow_provider_eo.ledger.store.dead_letter_rows import dead_letters_to_publish
from airflow_provider_eo.ledger.store.postgres_ledger import PostgresDeadLetters
from airflow_provider_eo.spark.task.bad_records import LedgerDeadLetterSink
from eo_devtools.ledger_direct import reserve_backfill_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dsn(stack: StackInfo) -> Iterator[str]:
    with fresh_database(stack.ledger_dsn) as made:
        yield made


@pytest.fixture
def ledger(dsn: str) -> Iterator[Ledger]:
    with Ledger(dsn) as led:
        yield led


def written(ledger: Ledger, pipeline: str, start: int, end: int) -> Epoch:
    """A WRITTEN backfill epoch over ``t[0]`` ``[start, end)``."""
    epoch = reserve_backfill_epoch(
        ledger, pipeline, [PartitionRange("t", 0, start, end)], dag_id="b", run_id=uuid.uuid4().hex
    )
    ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
    return epoch


def letter(pipeline: str, offset: int, epoch_id: int, error: str = "bad", topic: str = "t") -> DeadLetter:
    return DeadLetter(
        pipeline, topic, 0, offset, epoch_id, error, key=b"k", value=b"v",
        error_class="BadRecord", timestamp=1000 + offset, schema_id=None,
    )  # fmt: skip


def numbers(ledger: Ledger, pipeline: str) -> list[tuple[str, int, int | None, int | None]]:
    """(topic, offset, epoch_id, publish_seq) of each row, by topic and offset."""
    return [
        (r["topic"], r["offset"], r["epoch_id"], r["publish_seq"]) for r in ledger.list_dead_letters(pipeline)
    ]


def sequenced(ledger: Ledger, pipeline: str) -> int:
    with ledger.transaction() as cur:
        cur.execute("SELECT dead_letters_sequenced FROM eo.pipelines WHERE name = %s", (pipeline,))
        return int(cur.fetchone()[0])


def test_numbers_are_consecutive_per_pipeline_in_commit_order_and_given_once(ledger: Ledger) -> None:
    p, q = f"p_{uuid.uuid4().hex[:8]}", f"q_{uuid.uuid4().hex[:8]}"
    first, second, other = written(ledger, p, 0, 10), written(ledger, p, 10, 20), written(ledger, q, 0, 10)
    ledger.record_dead_letters([letter(p, 15, second.epoch_id), letter(p, 12, second.epoch_id, topic="s")])
    ledger.record_dead_letters([letter(p, 7, first.epoch_id), letter(p, 3, first.epoch_id)])
    ledger.record_dead_letters([letter(q, 4, other.epoch_id)])
    assert [seq for *_, seq in numbers(ledger, p)] == [None] * 4  # numbered only at commit
    ledger.mark_committed(second.epoch_id)  # the later epoch commits first: its letters come first
    ledger.mark_committed(other.epoch_id)
    ledger.mark_committed(first.epoch_id)
    ledger.mark_committed(first.epoch_id)  # a no-op re-commit numbers nothing again
    assert numbers(ledger, p) == [
        ("s", 12, second.epoch_id, 0),
        ("t", 3, first.epoch_id, 2),
        ("t", 7, first.epoch_id, 3),
        ("t", 15, second.epoch_id, 1),
    ]
    assert (sequenced(ledger, p), numbers(ledger, q), sequenced(ledger, q)) == (
        4, [("t", 4, other.epoch_id, 0)], 1,
    )  # fmt: skip
    with ledger.transaction() as cur:
        batch = dead_letters_to_publish(cur, p, 1, limit=2, max_bytes=1 << 20)
        by_bytes = dead_letters_to_publish(cur, p, 0, limit=10, max_bytes=3)  # 2 bytes each
    assert [(item.publish_seq, item.letter.offset) for item in batch] == [(1, 15), (2, 3)]
    assert [(item.publish_seq, item.letter.offset) for item in by_bytes] == [(0, 12), (1, 15)]
    assert by_bytes[0].letter == letter(p, 12, second.epoch_id, topic="s")


def test_an_older_epochs_write_never_overwrites_a_newer_epochs_row(ledger: Ledger) -> None:
    p = f"p_{uuid.uuid4().hex[:8]}"
    old, new = written(ledger, p, 0, 10), written(ledger, p, 10, 20)
    ledger.record_dead_letters([letter(p, 5, new.epoch_id, "newer")])
    ledger.record_dead_letters([letter(p, 5, old.epoch_id, "zombie")])  # a late flush of the old epoch
    ledger.record_dead_letters([letter(p, 6, old.epoch_id, "first")])
    ledger.record_dead_letters([letter(p, 6, old.epoch_id, "retried")])  # the same epoch again: overwrites
    rows = ledger.list_dead_letters(p)
    assert [(r["offset"], r["epoch_id"], r["error"]) for r in rows] == [
        (5, new.epoch_id, "newer"),
        (6, old.epoch_id, "retried"),
    ]
    ledger.mark_committed(new.epoch_id)
    ledger.record_dead_letters([letter(p, 5, new.epoch_id, "replayed")])  # keeps its publish_seq
    rows = ledger.list_dead_letters(p)
    assert [(r["offset"], r["error"], r["publish_seq"], r["timestamp"]) for r in rows] == [
        (5, "replayed", 0, 1005),
        (6, "retried", None, 1006),
    ]


def test_an_executors_sink_stores_dead_letters_through_the_dead_letter_store_alone(
    ledger: Ledger, dsn: str
) -> None:
    pipeline = f"p-{uuid.uuid4().hex[:8]}"
    epoch = written(ledger, pipeline, 0, 10)
    sink = LedgerDeadLetterSink(dsn)
    sink([letter(pipeline, 3, epoch.epoch_id), letter(pipeline, 5, epoch.epoch_id)])
    sink([letter(pipeline, 3, epoch.epoch_id, error="again")])  # an upsert: the same row
    sink.close()
    assert [(r["offset"], r["epoch_id"], r["error"]) for r in ledger.list_dead_letters(pipeline)] == [
        (3, epoch.epoch_id, "again"),
        (5, epoch.epoch_id, "bad"),
    ]
    store = PostgresDeadLetters.connect(dsn)
    assert not hasattr(store, "vote_written") and not hasattr(store, "transaction")
    store.close()
