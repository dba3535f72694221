"""A pack's small ranges share HBase batches (``segment_batches.py``), against Apache Kafka and
Apache HBase (Thrift1), without Spark (``run_pack``, as one Spark task runs it).

* one pack of ranges over many partitions, two of them of one partition, one with a dead
  letter, one with a tombstone, one empty, two partitions writing one row at equal offsets:
  exact cells and versions, exact per-range metrics and dead letters, all in one batch;
* a batch HBase refuses fails as one: the error names every range in it; the refused call
  (two ranges' segments at one version) writes nothing, the call before it stays written.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import happybase
import pytest

from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.ledger.model.epoch import DeadLetter
from airflow_provider_eo.spark.hbase_sink.hbase_writer import HBaseWriteError, SegmentWriter
from airflow_provider_eo.spark.hbase_sink.segment_batches import SegmentBatch
from airflow_provider_eo.spark.hbase_sink.segments import Segment
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.task_pack import run_pack
from airflow_provider_eo.spark.task.write_task import TaskSettings
from tests.conftest import StackInfo
from tests.kafka_helpers import produce

pytestmark = pytest.mark.integration

#: Each partition's records (key, value): offsets are their indexes.
RECORDS: dict[int, list[tuple[str, bytes | None]]] = {
    0: [("x", b'{"v":"x0"}'), ("x", b'{"v":"x1"}'), ("x", b'{"v":"x2"}'), ("y", b'{"v":"y3"}')],
    1: [("d", b'{"v":"d0"}'), ("d", b"oops"), ("d", b'{"v":"d2"}')],  # a dead letter at offset 1
    2: [],  # an empty range
    3: [("t", b'{"v":"t0"}'), ("t", None)],  # a tombstone at offset 1
    4: [("s", b'{"v":"from-4"}'), ("u4", b'{"v":"u"}')],
    5: [("s", b'{"v":"from-5"}'), ("u5", b'{"v":"u"}')],  # row s at the version of partition 4's
    **{p: [(f"r{p}", b'{"v":"%d"}' % p)] for p in range(6, 12)},
}


@pytest.fixture
def table(stack: StackInfo) -> Iterator[str]:
    name = f"pb_{uuid.uuid4().hex[:10]}"
    conn = happybase.Connection(stack.hbase_host, stack.hbase_port)
    conn.create_table(name, {"cf": {"max_versions": 5}})
    yield name
    conn.delete_table(name, disable=True)
    conn.close()


def settings(stack: StackInfo, table: str, **overrides: Any) -> TaskSettings:
    values: dict[str, Any] = {
        "pipeline": "pb",
        "epoch_id": 7,
        "hbase_table": table,
        "column_family": "cf",
        "mapping": MappingSpec(),
        "bad_records": "dead_letter",
        "batch_size": 1000,
        "batch_bytes": 4_194_304,
        "hbase_keyvalue_maxsize": 10_485_760,
        "read_timeout_s": 10.0,
        "kafka_config": {"bootstrap.servers": stack.kafka_bootstrap},
        "hbase_kwargs": {"host": stack.hbase_host, "port": stack.hbase_port, "timeout": 30000},
        "ledger_dsn": "postgresql://unused@localhost:1/unused",  # dead letters go to the test's sink
    }
    return TaskSettings(**{**values, **overrides})


def versions(stack: StackInfo, table: str) -> dict[bytes, list[tuple[bytes, int]]]:
    """Every row's ``cf:v`` versions, newest first, with their timestamps."""
    conn = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        hbase = conn.table(table)
        rows = [row for row, _ in hbase.scan()]
        return {row: hbase.cells(row, b"cf:v", versions=5, include_timestamp=True) for row in rows}
    finally:
        conn.close()


def test_a_pack_of_small_ranges_writes_exact_cells_in_one_batch(
    stack: StackInfo,
    table: str,
    kafka_topic_factory: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = kafka_topic_factory(partitions=len(RECORDS), prefix="pb")
    for p, records in RECORDS.items():
        if records:
            produce(stack.kafka_bootstrap, topic, records, partition=p)
    ranges = [
        TaskRange(topic, 0, 0, 2),
        TaskRange(topic, 1, 0, 3),
        TaskRange(topic, 2, 0, 0),
        TaskRange(topic, 3, 0, 2),
        TaskRange(topic, 0, 2, 4),  # partition 0 again, after other partitions' ranges
        TaskRange(topic, 4, 0, 2),
        TaskRange(topic, 5, 0, 2),
        *(TaskRange(topic, p, 0, 1) for p in range(6, 12)),
    ]
    dead: list[DeadLetter] = []
    with caplog.at_level(logging.INFO, logger="airflow_provider_eo.spark.task"):
        metrics = run_pack(settings(stack, table), ranges, dead_letter_sink=dead.extend)

    assert [(m.partition, m.start, m.end) for m in metrics] == [(r.partition, r.start, r.end) for r in ranges]
    assert [(m.records, m.skipped_offsets, m.cells_written, m.tombstones, m.bad_records, m.segments)
            for m in metrics] == [
        (2, 0, 1, 0, 0, 1),  # x0, x1 collapse into one cell
        (3, 0, 2, 0, 1, 2),  # the dead letter closes the segment before it
        (0, 0, 0, 0, 0, 0),
        (2, 0, 0, 1, 0, 1),  # the tombstone drops the pending put
        (2, 0, 2, 0, 0, 1),
        (2, 0, 2, 0, 0, 1),
        (2, 0, 2, 0, 0, 1),
        *[(1, 0, 1, 0, 0, 1)] * 6,
    ]  # fmt: skip
    assert [(d.topic, d.partition, d.offset, d.epoch_id, d.value) for d in dead] == [
        (topic, 1, 1, 7, b"oops")
    ]
    assert versions(stack, table) == {
        b"x": [(b"x2", 3), (b"x1", 1)],  # each range of partition 0 at its own versions
        b"y": [(b"y3", 3)],
        b"d": [(b"d2", 2), (b"d0", 0)],
        b"s": [(b"from-5", 1)],  # equal versions: the later range of the pack wins, as written one by one
        b"u4": [(b"u", 1)],
        b"u5": [(b"u", 1)],
        **{b"r%d" % p: [(b"%d" % p, 0)] for p in range(6, 12)},
    }  # row t: its put and its tombstone in one segment, a family delete at version 1
    done = [r.getMessage() for r in caplog.records if r.getMessage().startswith("task done")]
    assert len(done) == 1 and f" ranges={len(ranges)} records=19 " in done[0], done
    assert " cells=15 bad=1 segments=13 batches=1 " in done[0], done


def test_a_failed_batch_names_every_range_in_it(stack: StackInfo, table: str) -> None:
    writer = SegmentWriter(
        {"host": stack.hbase_host, "port": stack.hbase_port}, table, attempts=2, backoff_s=0
    )
    batch = SegmentBatch()
    batch.add(Segment(0, 2, 3, 10, puts={b"ok-a": {b"cf:v": b"a"}}), "t/0[0,3)")
    batch.add(Segment(0, 4, 5, 10, puts={b"r" * 40_000: {b"cf:v": b"b"}}), "t/1[0,5)")  # over 32,767 bytes
    batch.add(Segment(3, 4, 2, 10, puts={b"ok-c": {b"cf:v": b"c"}}), "t/2[3,5)")
    with pytest.raises(HBaseWriteError) as info:
        writer.write_batch(batch)
    writer.close()
    assert str(info.value).startswith(
        f"cannot write to HBase table {table!r}: batch of 3 segments of ranges t/0[0,3), t/1[0,5), t/2[3,5) "
        "(versions 2..4 in 2 calls) failed and is not retried: TApplicationException: "
    )
    assert versions(stack, table) == {b"ok-a": [(b"a", 2)]}  # the call at version 4: refused whole
