"""Kafka helpers for tests: batching, compressing producers, a range reader and admin steps
(DeleteRecords, CreatePartitions, throwaway topics) on the real broker."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

BATCHING_PRODUCER = {"linger.ms": 5, "compression.type": "lz4", "enable.idempotence": True}
"""How the tests' producers send: batched (many records per batch), lz4-compressed, idempotent."""

Record = tuple[bytes | str | None, bytes | str | None]


def recent_timestamp_ms(seconds_ago: int = 600) -> int:
    """A whole-second CreateTime (ms) ``seconds_ago`` in the past: old enough to precede the
    records a test sends after it, recent enough that the broker's time-based retention
    (7 days) keeps it. Fixed historical timestamps would be deleted by retention."""
    return (int(time.time()) - seconds_ago) * 1000


class RecordSender:
    """A long-lived producer with :data:`BATCHING_PRODUCER` settings (plus ``extra`` librdkafka
    settings): :meth:`send` queues one record, :meth:`flush` delivers everything queued and
    raises RuntimeError naming the topics and the first errors when any delivery failed."""

    def __init__(self, bootstrap: str, **extra: Any) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, **BATCHING_PRODUCER, **extra})
        self._errors: list[str] = []
        self._topics: set[str] = set()

    def _on_delivery(self, err: object, _msg: object) -> None:
        if err is not None:
            self._errors.append(str(err))

    def send(
        self,
        topic: str,
        key: bytes | str | None,
        value: bytes | str | None,
        *,
        partition: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        """Queue one record; ``timestamp_ms`` sets its CreateTime (default: now)."""
        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": self._on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        if headers is not None:
            kwargs["headers"] = headers
        if timestamp_ms is not None:
            kwargs["timestamp"] = timestamp_ms
        self._producer.produce(topic, **kwargs)
        self._producer.poll(0)
        self._topics.add(topic)

    def flush(self, timeout_s: float = 30) -> None:
        """Deliver every queued record within ``timeout_s``; RuntimeError on any failure."""
        remaining = self._producer.flush(timeout_s)
        if self._errors or remaining:
            errors, self._errors = self._errors[:3], []
            raise RuntimeError(
                f"produce to {sorted(self._topics)}: {remaining} undelivered, errors: {errors}"
            )

    def poll(self, timeout_s: float) -> None:
        """Serve callbacks (delivery reports, statistics) for up to ``timeout_s``."""
        self._producer.poll(timeout_s)


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[Record],
    *,
    partition: int | None = None,
    headers: list[tuple[str, bytes]] | None = None,
    timestamps: Sequence[int] | None = None,
) -> int:
    """Produce ``(key, value)`` records in order (batched and compressed) and flush; return the count.

    ``timestamps`` gives each record's CreateTime in ms (one per record). Raises
    RuntimeError naming topic and error when any delivery fails.
    """
    sender = RecordSender(bootstrap)
    count = 0
    for key, value in records:
        stamp = None if timestamps is None else timestamps[count]
        sender.send(topic, key, value, partition=partition, headers=headers, timestamp_ms=stamp)
        count += 1
    if timestamps is not None and len(timestamps) != count:
        raise ValueError(f"{len(timestamps)} timestamps for {count} records")
    sender.flush()
    return count


def consume_range(
    bootstrap: str, topic: str, partition: int, start: int, end: int
) -> list[tuple[int, bytes | None, bytes | None]]:
    """Read ``[start, end)`` of one partition by assign+seek; returns (offset, key, value) tuples."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"eo-test-reader-{topic}", "enable.auto.commit": False}
    )
    out: list[tuple[int, bytes | None, bytes | None]] = []
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        while len(out) < end - start:
            msg = consumer.poll(10)
            if msg is None:
                raise RuntimeError(
                    f"consume {topic}[{partition}]: timed out after {len(out)} of {end - start}"
                )
            if msg.error():
                raise RuntimeError(f"consume {topic}[{partition}]: {msg.error()}")
            offset = msg.offset()
            assert offset is not None
            if offset >= end:
                break
            out.append((offset, msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def delete_records_before(bootstrap: str, topic: str, partition: int, offset: int) -> int:
    """DeleteRecords: drop ``topic[partition]`` below ``offset`` (as retention would); return
    the partition's new low watermark as the broker reports it. Raises on any error."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, offset)], request_timeout=15)
    (future,) = futures.values()
    return int(future.result(timeout=20).low_watermark)


def grow_partitions(bootstrap: str, topic: str, count: int, timeout_s: float = 15) -> None:
    """CreatePartitions: grow the live ``topic`` to ``count`` partitions, then
    :func:`wait_for_leaders` of all of them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic, count)], request_timeout=15)[topic].result(timeout=20)
    wait_for_leaders(bootstrap, topic, count, timeout_s)


def wait_for_leaders(bootstrap: str, topic: str, count: int, timeout_s: float = 15) -> None:
    """Wait (at most ``timeout_s``) until the metadata a fresh client reads (as every hook call
    does) shows partitions ``0..count-1`` of ``topic`` with a leader. AssertionError naming
    the topic and what was seen on timeout."""
    deadline = time.monotonic() + timeout_s
    seen: list[int] = []
    while True:
        with suppress(Exception):
            meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=5).topics[topic]
            seen = sorted(p for p, info in meta.partitions.items() if info.leader >= 0)
            if meta.error is None and seen == list(range(count)):
                return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{topic}: partitions with a leader {seen} after {timeout_s:g}s, wanted {count}"
            )
        time.sleep(0.1)


@contextmanager
def created_topic(bootstrap: str, partitions: int = 1, prefix: str = "t") -> Iterator[str]:
    """A uuid-named topic for a whole module (``kafka_topic_factory`` is per test); deleted after."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    admin.create_topics([NewTopic(name, num_partitions=partitions)])[name].result(timeout=15)
    try:
        yield name
    finally:
        with suppress(Exception):
            admin.delete_topics([name])[name].result(timeout=15)
