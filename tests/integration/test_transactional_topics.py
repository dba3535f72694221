"""Epochs over a topic written by transactional producers (real Kafka, real HBase, real ledger).

Two transactional producers interleave committed and aborted transactions in one
partition. The pipeline's Kafka connection asks for ``isolation.level=read_uncommitted``
on purpose: the reservation (watermarks) and the range reader must both read
``read_committed`` anyway. Proven, with exact HBase rows, ledger rows and group offsets:

* aborted records (also when interleaved with committed ones) never reach HBase;
* ranges ending on control markers, and a range holding only an aborted transaction,
  are read to their end; ``records + skipped_offsets`` accounts for every offset;
* an open (undecided) transaction holds the reservation at the last stable offset
  (no epoch while nothing before it is new), and a read past it fails at once with a
  clear, retryable error instead of hanging; after the commit the next epoch takes it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import happybase
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.range_reader import RangeReadError, read_range
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import (
    EpochRoundTrip,
    EpochRow,
    kafka_connection,
    ledger_connection,
    pipeline_spec,
    scan,
)
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import created_topic

pytestmark = pytest.mark.integration

READ_UNCOMMITTED = {"isolation.level": "read_uncommitted"}


class TxProducer:
    """A transactional producer; every record is flushed before the next call, so the
    offsets of interleaved producers follow the call order. ``commit``/``abort`` return
    once the control marker is in the partition: the broker writes it after answering the
    producer, and the last stable offset only moves then."""

    def __init__(self, bootstrap: str, topic: str, name: str) -> None:
        self.topic = topic
        self.log_end = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"tx-{name}", **READ_UNCOMMITTED}
        )
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": f"{name}-{topic}",
                "transaction.timeout.ms": 300_000,
                "linger.ms": 5,
            }
        )
        self.producer.init_transactions(30)

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, key: str, value: bytes | None) -> None:
        self.producer.produce(self.topic, key=key, value=value, partition=0)
        assert self.producer.flush(30) == 0, f"{self.topic}: record {key} not delivered"

    def commit(self) -> None:
        self._finish(self.producer.commit_transaction)

    def abort(self) -> None:
        self._finish(self.producer.abort_transaction)

    def _finish(self, end_transaction: Callable[[float], None]) -> None:
        before = self._high_watermark()
        end_transaction(30)
        deadline = time.monotonic() + 30
        while self._high_watermark() <= before:
            assert time.monotonic() < deadline, f"{self.topic}: no transaction marker after 30 s"
            time.sleep(0.05)

    def _high_watermark(self) -> int:
        return int(self.log_end.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10)[1])


@dataclass
class Case:
    stack: StackInfo
    topic: str
    table: str
    trip: EpochRoundTrip
    a: TxProducer
    b: TxProducer


@pytest.fixture(scope="module")
def ledger_dsn(stack: StackInfo) -> Iterator[str]:
    with fresh_database(stack.ledger_dsn) as dsn:
        yield dsn


@pytest.fixture
def case(stack: StackInfo, ledger_dsn: str) -> Iterator[Case]:
    """A fresh topic, table and pipeline; two transactional producers on the topic."""
    suffix = uuid.uuid4().hex[:8]
    table = f"tx_{suffix}"
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(table, {"d": {"max_versions": 3}})
    with created_topic(stack.kafka_bootstrap, prefix="tx") as topic:
        spec = pipeline_spec(f"tx_{suffix}", topic, table, batch_size=2, spark={"split_size": 3})
        env = {
            **stack.conn_env,
            "AIRFLOW_CONN_EO_LEDGER": ledger_connection(ledger_dsn),
            "AIRFLOW_CONN_EO_KAFKA": kafka_connection(stack.kafka_bootstrap, READ_UNCOMMITTED),
        }
        a = TxProducer(stack.kafka_bootstrap, topic, "a")
        b = TxProducer(stack.kafka_bootstrap, topic, "b")
        yield Case(stack, topic, table, EpochRoundTrip(spec, ledger_dsn, env), a, b)
    hbase.delete_table(table, disable=True)
    hbase.close()


def test_committed_and_aborted_transactions_interleaved(case: Case, caplog: pytest.LogCaptureFixture) -> None:
    a, b, trip = case.a, case.b, case.trip
    a.begin()
    a.send("k1", b'{"v":"a1"}')  # 0
    a.send("k2", b'{"v":"a1"}')  # 1
    a.commit()  # marker 2
    a.begin()
    a.send("k1", b'{"v":"a2"}')  # 3
    b.begin()
    b.send("k3", b'{"v":"aborted"}')  # 4
    b.send("k1", b'{"v":"aborted"}')  # 5
    a.send("k2", None)  # 6 tombstone
    b.abort()  # marker 7
    a.commit()  # marker 8
    assert trip.kafka.watermarks([(case.topic, 0)]) == {(case.topic, 0): (0, 9)}

    with caplog.at_level(logging.WARNING, logger="airflow_provider_eo.spark.task.range_reader"):
        first = trip.run_stream_epoch()  # [0, 9): tasks [0,3) [3,6) [6,9); the last ends on two markers
    assert first is not None
    assert scan(case.stack, case.table) == {b"k1": {b"d:v": b"a2"}}
    overridden = [
        r.getMessage() for r in caplog.records if "isolation.level=read_uncommitted" in r.getMessage()
    ]
    assert len(overridden) == 3, overridden  # one per task: the connection's setting is overridden

    a.begin()
    a.send("k3", b'{"v":"aborted"}')  # 9
    a.send("k4", b'{"v":"aborted"}')  # 10
    a.abort()  # marker 11
    second = trip.run_stream_epoch()  # [9, 12): only an aborted transaction and its marker
    assert second is not None
    assert scan(case.stack, case.table) == {b"k1": {b"d:v": b"a2"}}

    assert trip.epochs() == [
        EpochRow("stream", "COMMITTED", ((0, 0, 9),), ((0, 4, 5),)),
        EpochRow("stream", "COMMITTED", ((0, 9, 12),), ((0, 0, 3),)),
    ]
    assert trip.group_offsets() == {0: 12}


def test_open_transaction_holds_the_reservation_at_the_last_stable_offset(case: Case) -> None:
    a, b, trip = case.a, case.b, case.trip
    a.begin()
    a.send("k1", b'{"v":"a1"}')  # 0
    a.send("k2", b'{"v":"a1"}')  # 1
    a.send("k3", b'{"v":"a1"}')  # 2
    a.commit()  # marker 3
    b.begin()
    b.send("k3", b'{"v":"b4"}')  # 4: undecided
    a.begin()
    a.send("k4", b'{"v":"a4"}')  # 5
    a.commit()  # marker 6: committed, but behind the open transaction
    assert trip.kafka.watermarks([(case.topic, 0)]) == {(case.topic, 0): (0, 4)}  # the LSO, not 7
    first = trip.run_stream_epoch()  # [0, 4): up to the last stable offset
    assert first is not None
    assert trip.reserve() is None  # nothing below the last stable offset is new
    assert trip.group_offsets() == {0: 4}

    with pytest.raises(RangeReadError) as info:  # a range past the LSO fails at once, retryable
        list(read_range({"bootstrap.servers": case.stack.kafka_bootstrap}, TaskRange(case.topic, 0, 4, 7)))
    assert str(info.value) == (
        f"cannot read {case.topic} partition 0 up to end offset 7: reached offset 4 (range [4, 7)): "
        "partition EOF at offset 4, the last stable offset: the records from offset 4 up to the high "
        "watermark 7 include a transaction that is neither committed nor aborted yet; retry once the "
        "producer commits or aborts it (or its transaction times out)"
    )
    assert scan(case.stack, case.table) == {
        b"k1": {b"d:v": b"a1"},
        b"k2": {b"d:v": b"a1"},
        b"k3": {b"d:v": b"a1"},
    }

    b.commit()  # marker 7
    second = trip.run_stream_epoch()  # [4, 8): tasks [4,6) [6,8); the second holds only markers
    assert second is not None
    assert scan(case.stack, case.table) == {
        b"k1": {b"d:v": b"a1"},
        b"k2": {b"d:v": b"a1"},
        b"k3": {b"d:v": b"b4"},
        b"k4": {b"d:v": b"a4"},
    }
    assert trip.epochs() == [
        EpochRow("stream", "COMMITTED", ((0, 0, 4),), ((0, 3, 1),)),
        EpochRow("stream", "COMMITTED", ((0, 4, 8),), ((0, 2, 2),)),
    ]
    assert trip.group_offsets() == {0: 8}
