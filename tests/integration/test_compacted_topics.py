"""Epochs over a compacted topic (real Kafka log cleaner, real HBase, real ledger).

The topic is ``cleanup.policy=compact`` with ``segment.ms=100`` and
``min.cleanable.dirty.ratio=0.01``; the devstack broker runs its cleaner every second.
Records are produced in rounds that each roll a segment, then the test waits (bounded)
until the cleaner left exactly the offsets compaction must keep. Epochs capped at 6
offsets then cross ranges that are all holes, partly holes and hole-free: every epoch
completes without waiting on a hole, ``records + skipped_offsets`` covers each range,
and HBase holds the latest value of every key (a compacted-away value never shows).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import happybase
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import (
    EpochRoundTrip,
    EpochRow,
    ledger_connection,
    pipeline_spec,
    scan,
)
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import produce

pytestmark = pytest.mark.integration

COMPACTED = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"}
ROUND_GAP_S = 0.3  # > segment.ms: every round's first record rolls a new segment
KEYS = [f"k{i}" for i in range(5)]

# offset 0: "solo" (never rewritten); rounds 1-4: k0..k4 at 1 + 5 * (round - 1) + i, k4 a tombstone in
# round 4 (offset 20); offset 21: k0 once more, alone in the active segment (which is never cleaned).
SURVIVORS = [0, 16, 17, 18, 19, 20, 21]
HIGH_WATERMARK = 22


def present_offsets(bootstrap: str, topic: str) -> list[int]:
    """Offsets of the records the partition still holds (read to the end, bounded)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"probe-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    offsets: list[int] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None:
                continue
            error = msg.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                return offsets
            assert error is None, f"{topic}: {error}"
            offsets.append(int(msg.offset() or 0))
        raise AssertionError(f"{topic}: no partition EOF within 30 s (read {offsets})")
    finally:
        consumer.close()


def wait_for_compaction(bootstrap: str, topic: str, expected: list[int], timeout_s: float = 120) -> None:
    """Poll until the log holds exactly ``expected`` offsets; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    seen = present_offsets(bootstrap, topic)
    while seen != expected:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{topic}: log cleaner left offsets {seen} after {timeout_s:g} s, want {expected}"
            )
        time.sleep(1)
        seen = present_offsets(bootstrap, topic)


@pytest.fixture(scope="module")
def topic(stack: StackInfo) -> Iterator[str]:
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    name = f"compacted-{uuid.uuid4().hex[:12]}"
    admin.create_topics([NewTopic(name, 1, 1, config=COMPACTED)])[name].result(timeout=15)
    yield name
    admin.delete_topics([name])[name].result(timeout=15)


def test_epochs_over_compaction_holes_write_the_latest_value_of_every_key(
    stack: StackInfo, topic: str
) -> None:
    bootstrap = stack.kafka_bootstrap
    produce(bootstrap, topic, [("solo", b'{"v":1}')] + [(k, json.dumps({"v": 1}).encode()) for k in KEYS])
    for round_no in (2, 3, 4):
        time.sleep(ROUND_GAP_S)
        values: list[bytes | None] = [json.dumps({"v": round_no}).encode() for _ in KEYS]
        if round_no == 4:
            values[4] = None  # tombstone of k4
        produce(bootstrap, topic, list(zip(KEYS, values, strict=True)))
    time.sleep(ROUND_GAP_S)
    produce(bootstrap, topic, [("k0", b'{"v":5}')])
    wait_for_compaction(bootstrap, topic, SURVIVORS)

    table = f"compacted_{uuid.uuid4().hex[:8]}"
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(table, {"d": {"max_versions": 3}})
    try:
        with fresh_database(stack.ledger_dsn) as dsn:
            spec = pipeline_spec(
                table,
                topic,
                table,
                batch_size=2,
                caps={"max_records_per_partition": 6},
                spark={"split_size": 4},
            )
            trip = EpochRoundTrip(
                spec, dsn, {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)}
            )
            committed = [trip.run_stream_epoch() for _ in range(5)]
            assert [e is None for e in committed] == [False, False, False, False, True]
            assert trip.epochs() == [
                EpochRow("stream", "COMMITTED", ((0, 0, 6),), ((0, 1, 5),)),  # "solo", then a hole
                EpochRow("stream", "COMMITTED", ((0, 6, 12),), ((0, 0, 6),)),  # only a hole
                EpochRow("stream", "COMMITTED", ((0, 12, 18),), ((0, 2, 4),)),  # hole, then 16 and 17
                EpochRow("stream", "COMMITTED", ((0, 18, 22),), ((0, 4, 0),)),  # no hole
            ]
            assert trip.group_offsets() == {0: HIGH_WATERMARK}
        assert scan(stack, table) == {
            b"solo": {b"d:v": b"1"},
            b"k0": {b"d:v": b"5"},
            b"k1": {b"d:v": b"4"},
            b"k2": {b"d:v": b"4"},
            b"k3": {b"d:v": b"4"},
        }
    finally:
        hbase.delete_table(table, disable=True)
        hbase.close()
