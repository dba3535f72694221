"""read_range and a pack's RangeConsumer (its window) against the real broker (Apache Kafka):
exact records, exact end, clear errors."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.range_reader import RangeConsumer, RangeReadError, read_range
from eo_devtools.stack.ports import find_free_port
from tests.conftest import StackInfo
from tests.kafka_helpers import BATCHING_PRODUCER, RecordSender, produce

pytestmark = pytest.mark.integration


def _config(stack: StackInfo) -> dict[str, str]:
    return {"bootstrap.servers": stack.kafka_bootstrap}


@pytest.fixture(scope="module")
def topic10(stack: StackInfo, module_topic_factory: Callable[..., str]) -> str:
    """Two partitions: partition 1 holds k0..k9 / v0..v9 (offsets 0..9), partition 0 one record.
    One per module: its tests only read it."""
    topic = module_topic_factory(partitions=2, prefix="reader")
    produce(
        stack.kafka_bootstrap,
        topic,
        [(f"k{i}", f"v{i}") for i in range(10)],
        partition=1,
        headers=[("h", b"x")],
    )
    produce(stack.kafka_bootstrap, topic, [("other", "p0")], partition=0)
    return topic


def _triples(records: list) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in records]


def test_reads_exactly_the_range_and_stops_before_end(stack: StackInfo, topic10: str) -> None:
    records = list(read_range(_config(stack), TaskRange(topic10, 1, 2, 7), batch_size=2))
    assert _triples(records) == [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(2, 7)]
    assert {(r.topic, r.partition, r.headers) for r in records} == {(topic10, 1, (("h", b"x"),))}
    assert all(r.timestamp_ms is not None and r.timestamp_ms > 0 for r in records)


def test_range_ending_at_the_high_watermark_ends_at_partition_eof(stack: StackInfo, topic10: str) -> None:
    records = list(read_range(_config(stack), TaskRange(topic10, 1, 0, 10)))
    assert [r.offset for r in records] == list(range(10))
    assert _triples(list(read_range(_config(stack), TaskRange(topic10, 0, 0, 1)))) == [(0, b"other", b"p0")]


def test_split_ranges_read_every_record_exactly_once(stack: StackInfo, topic10: str) -> None:
    parts = [TaskRange(topic10, 1, a, b) for a, b in [(0, 3), (3, 4), (4, 4), (4, 9), (9, 10)]]
    offsets = [r.offset for part in parts for r in read_range(_config(stack), part, batch_size=3)]
    assert offsets == list(range(10))


def test_one_consumer_reads_a_packs_ranges_in_turn_each_exactly(stack: StackInfo, topic10: str) -> None:
    """A packed task's consumer: partitions in turn, a partition again (a fresh consumer), and
    a range ending at the high watermark (its end-of-partition event) between them."""
    reader = RangeConsumer(_config(stack))
    parts = [(1, 2, 5), (0, 0, 1), (1, 5, 10), (1, 0, 2), (0, 0, 1)]
    try:
        read = [[(r.partition, r.offset) for r in reader.read(TaskRange(topic10, *part))] for part in parts]
    finally:
        reader.close()
    assert read == [[(p, o) for o in range(a, b)] for p, a, b in parts]


def test_end_beyond_the_data_is_a_clear_error(stack: StackInfo, topic10: str) -> None:
    seen: list[int] = []
    with pytest.raises(RangeReadError) as info:
        seen.extend(r.offset for r in read_range(_config(stack), TaskRange(topic10, 1, 5, 15)))
    assert seen == [5, 6, 7, 8, 9]
    assert str(info.value) == (
        f"cannot read {topic10} partition 1 up to end offset 15: reached offset 10 (range [5, 15)): "
        "partition EOF at offset 10: records are missing"
    )


def test_unreachable_broker_is_a_clear_error_after_the_timeout() -> None:
    config = {"bootstrap.servers": f"127.0.0.1:{find_free_port()}"}
    with pytest.raises(RangeReadError) as info:
        list(read_range(config, TaskRange("nowhere", 3, 4, 8), timeout_s=2))
    message = str(info.value)
    assert message.startswith(
        "cannot read nowhere partition 3 up to end offset 8: reached offset 4 (range [4, 8)): "
        "no progress for 2 s (broker unreachable?) (client errors: "
    ), message
    assert "Connection refused" in message, message


def test_tls_to_a_plaintext_listener_names_the_handshake_failure(stack: StackInfo) -> None:
    """The broker's PLAINTEXT listener hangs up on a TLS ClientHello; the error says so
    (librdkafka's wording varies, see test_kafka_hook's TLS test)."""
    config = {"bootstrap.servers": stack.kafka_bootstrap, "security.protocol": "SSL"}
    with pytest.raises(RangeReadError) as info:
        list(read_range(config, TaskRange("t", 0, 0, 4), timeout_s=2))
    message = str(info.value)
    assert message.startswith("cannot read t partition 0 up to end offset 4: reached offset 0"), message
    assert "(client errors: " in message, message
    assert "SSL connection closed by peer" in message and "in state SSL_HANDSHAKE" in message, message


def test_transaction_markers_leave_offset_gaps_and_the_read_still_ends_at_end(
    stack: StackInfo, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="reader-tx")
    producer = Producer(
        {"bootstrap.servers": stack.kafka_bootstrap, "transactional.id": f"tx-{topic}", **BATCHING_PRODUCER}
    )
    producer.init_transactions(15)
    for batch in (["a", "b"], ["c"]):
        producer.begin_transaction()
        for value in batch:
            producer.produce(topic, key=value, value=value, partition=0)
        producer.commit_transaction(15)  # flushes the transaction's batch, then writes its marker
    # data at 0, 1, marker at 2, data at 3, marker at 4: the high watermark is 5
    records = list(read_range(_config(stack), TaskRange(topic, 0, 0, 5)))
    assert _triples(records) == [(0, b"a", b"a"), (1, b"b", b"b"), (3, b"c", b"c")]
    assert _triples(list(read_range(_config(stack), TaskRange(topic, 0, 2, 3)))) == []
    assert _triples(list(read_range(_config(stack), TaskRange(topic, 0, 1, 4)))) == [
        (1, b"b", b"b"),
        (3, b"c", b"c"),
    ]


def test_empty_range_yields_nothing_without_contacting_the_broker() -> None:
    assert list(read_range({"bootstrap.servers": "127.0.0.1:1"}, TaskRange("t", 0, 5, 5))) == []


def _transactions(bootstrap: str, topic: str, partition: int) -> None:
    """Commit a, b (offsets 0, 1; marker 2), abort x, y (3, 4; marker 5), commit c (6; marker 7)."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}", **BATCHING_PRODUCER}
    )
    producer.init_transactions(15)
    for batch, commit in ((["a", "b"], True), (["x", "y"], False), (["c"], True)):
        producer.begin_transaction()
        for value in batch:
            producer.produce(topic, key=value, value=value, partition=partition)
        producer.flush(15)
        if commit:
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)


def test_a_window_reads_a_packs_many_small_ranges_each_exactly(
    stack: StackInfo, kafka_topic_factory: Callable[..., str]
) -> None:
    """30 partitions read with one consumer told the pack's ranges ahead (a window of 16): a
    partition's three sub-ranges (committed records, then only an aborted transaction and
    markers, then the last commit) spread over the pack, two adjacent sub-ranges of a
    partition read whole again later, an empty range, and a range past its partition's end
    in the middle: each range yields exactly its
    records, the failing one names itself, and the ranges after it still read exactly."""
    topic = kafka_topic_factory(partitions=30, prefix="reader-window")
    _transactions(stack.kafka_bootstrap, topic, 0)
    sender = RecordSender(stack.kafka_bootstrap)
    for p in range(1, 30):
        for i in range(p % 5 + 1):
            sender.send(topic, f"p{p}-{i}", f"v{i}", partition=p)
    sender.flush()
    whole = [(p, 0, p % 5 + 1) for p in range(1, 30)]
    parts = [
        (0, 0, 3), *whole[0:10], (0, 3, 6), (1, 2, 2), *whole[10:14], (15, 0, 4),
        *whole[15:19], (24, 0, 2), (24, 2, 5), *whole[19:], (0, 6, 8),
    ]  # fmt: skip
    ranges = [TaskRange(topic, *part) for part in parts]
    reader = RangeConsumer(_config(stack), 1 << 20, ranges)
    read: list[list[tuple[int, int, bytes | None]] | str] = []
    try:
        for rng in ranges:
            try:
                read.append([(r.partition, r.offset, r.key) for r in reader.read(rng, batch_size=7)])
            except RangeReadError as exc:
                read.append(str(exc))
    finally:
        reader.close()
    expected: dict[tuple[int, int, int], list[tuple[int, int, bytes | None]] | str] = {
        (0, 0, 3): [(0, 0, b"a"), (0, 1, b"b")],
        (0, 3, 6): [],
        (0, 6, 8): [(0, 6, b"c")],
        (15, 0, 4): f"cannot read {topic} partition 15 up to end offset 4: reached offset 1 (range [0, 4)): "
        "partition EOF at offset 1: records are missing",
    }
    assert read == [
        expected.get((p, a, b), [(p, o, f"p{p}-{o}".encode()) for o in range(a, b)]) for p, a, b in parts
    ]


def test_a_window_buffers_upcoming_ranges_within_its_byte_bound(
    stack: StackInfo, kafka_topic_factory: Callable[..., str]
) -> None:
    """A pre-fetch bound of 128 KiB: a window of 2 ranges, 64 KiB each. 600 KB of records that
    do not compress per partition, fetched 64 KiB per partition at a time: while the second
    range is read, the third one's partition fills its slot, is paused, and resumes where the
    slot stopped once its range is read; every range yields exactly its records."""
    topic = kafka_topic_factory(partitions=3, prefix="reader-bound")
    sender = RecordSender(stack.kafka_bootstrap)
    values = [random.Random(i).randbytes(3000) for i in range(200)]
    for p in range(3):
        for i, value in enumerate(values):
            sender.send(topic, f"p{p}-{i}", value, partition=p)
    sender.flush()
    ranges = [TaskRange(topic, 0, 0, 200), TaskRange(topic, 1, 0, 200), TaskRange(topic, 2, 5, 200)]
    reader = RangeConsumer({**_config(stack), "max.partition.fetch.bytes": "65536"}, 1 << 17, ranges)
    try:
        read = [
            [(r.partition, r.offset, r.key, r.value) for r in reader.read(rng, batch_size=50)]
            for rng in ranges
        ]
    finally:
        reader.close()
    assert read == [
        [(rng.partition, o, f"p{rng.partition}-{o}".encode(), values[o]) for o in range(rng.start, 200)]
        for rng in ranges
    ]
