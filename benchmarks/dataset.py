"""The benchmark data: realistic JSON records produced once, read by every run.

Each record is a JSON object of 9 fields (strings, numbers, a boolean, a nested
object), about 300 bytes, keyed by a user id, as an application event producer would
send it: batched (``linger.ms``) and lz4-compressed. Records go round-robin over the
partitions, so every partition gets ``records / partitions`` (+1) of them.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PRODUCER_CONFIG = {"linger.ms": "20", "batch.size": "262144", "compression.type": "lz4", "acks": "all"}
EVENT_TYPES = ("page_view", "add_to_cart", "checkout", "search", "login", "logout", "share")
COUNTRIES = ("DE", "FR", "US", "BR", "IN", "JP", "NG", "SE")


@dataclass(frozen=True)
class Dataset:
    """Records ``[0, ends[p])`` of every partition ``p`` of ``topic``."""

    topic: str
    ends: tuple[int, ...]
    value_bytes: int

    @property
    def records(self) -> int:
        """Number of records over all partitions."""
        return sum(self.ends)

    @property
    def megabytes(self) -> float:
        """Key plus value bytes of all records, in MB (10**6 bytes)."""
        return self.value_bytes / 1e6


def event_fields(i: int) -> tuple[bytes, dict[str, Any]]:
    """Key and fields of the ``i``-th record (deterministic): what every format of it carries."""
    user = i % 250_000
    fields = {
        "event_id": f"{uuid.UUID(int=i * 2654435761 % (1 << 128))}",
        "user_id": user,
        "type": EVENT_TYPES[i % len(EVENT_TYPES)],
        "url": f"https://shop.example.com/products/{i % 9973}?ref=campaign-{i % 31}&page={i % 7}",
        "ts": f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{i % 59:02d}.{i % 1000:03d}Z",
        "amount": round((i % 10_000) / 100, 2),
        "consent": i % 3 == 0,
        "session": f"s-{i * 7919 % 1_000_003:08x}",
        "device": {
            "os": ("android", "ios", "web")[i % 3],
            "version": f"{14 + i % 4}.{i % 10}",
            "country": COUNTRIES[i % 8],
        },
    }
    return f"user-{user:07d}".encode(), fields


def event(i: int) -> tuple[bytes, bytes]:
    """Key and JSON value of the ``i``-th record (deterministic)."""
    key, fields = event_fields(i)
    return key, json.dumps(fields, separators=(",", ":")).encode()


def sized_event(record_bytes: int) -> Callable[[int], tuple[bytes, bytes]]:
    """``i -> (key, value)``: :func:`event` with a ``blob`` field of random hex (which lz4
    cannot shrink) bringing key plus value to ``record_bytes`` (never below the plain event)."""

    def make(i: int) -> tuple[bytes, bytes]:
        key, value = event(i)
        room = record_bytes - len(key) - len(value) - len(',"blob":""')
        if room <= 0:
            return key, value
        blob = random.Random(i).randbytes(room // 2).hex()
        return key, value[:-1] + b',"blob":"' + blob.encode() + b'"}'

    return make


def produce_dataset(
    bootstrap: str,
    records: int,
    partitions: int,
    *,
    topic: str | None = None,
    make: Callable[[int], tuple[bytes, bytes]] = event,
) -> Dataset:
    """Create a fresh topic and produce ``records`` records (``make(i)``) to it; returns the dataset.

    Raises RuntimeError when delivery fails or the high watermarks do not add up.
    """
    topic = topic or f"bench-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, "message.max.bytes": 1_048_588})
    size = 0
    failures: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    for i in range(records):
        key, value = make(i)
        size += len(key) + len(value)
        while True:
            try:
                producer.produce(topic, value, key, partition=i % partitions, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    deadline = time.monotonic() + 1800
    while producer.flush(5) and time.monotonic() < deadline:
        pass
    if len(producer) or failures:
        raise RuntimeError(f"produce to {topic}: {len(producer)} undelivered, failures: {failures[:3]}")
    ends = high_watermarks(bootstrap, topic, partitions)
    if sum(ends) != records:
        raise RuntimeError(f"{topic}: high watermarks {ends} do not add up to {records} records")
    return Dataset(topic, tuple(ends), size)


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> list[int]:
    """High watermark of each partition of ``topic``, read from the broker."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eo-bench-probe"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)
        ]
    finally:
        consumer.close()


def delete_topic(bootstrap: str, topic: str) -> None:
    """Delete the dataset's topic (its disk space goes back)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
    admin.delete_topics([topic])[topic].result(60)
