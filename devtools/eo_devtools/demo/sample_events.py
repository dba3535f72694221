"""Deterministic sample events for the demo: updates to the same keys, tombstones, bad records."""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Iterator

from confluent_kafka import KafkaError, Message, Producer

from eo_devtools.demo.expected_state import ProducedRecord

BAD_VALUES = (b"{not json", b"\xff\xfe\x00 not utf-8", b"[1, 2, 3]")


def sample_events(
    count: int, *, users: int = 50, seed: int = 7
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """Yield ``count`` (key, value) pairs: ~3% tombstones, ~1% bad records, the rest JSON updates."""
    rng = random.Random(seed)
    for i in range(count):
        key = f"user-{rng.randrange(users):04d}".encode()
        roll = rng.random()
        if roll < 0.01:
            yield key, BAD_VALUES[i % len(BAD_VALUES)]
        elif roll < 0.04:
            yield key, None
        else:
            event = {"seq": i, "clicks": rng.randrange(1000), "country": rng.choice(["DE", "FR", "IN", "US"])}
            if rng.random() < 0.3:
                event["plan"] = rng.choice(["free", "pro"])
            yield key, json.dumps(event).encode()


def partition_for(key: bytes, partitions: int) -> int:
    """The partition a key goes to (stable, so one row's records share a partition)."""
    return zlib.crc32(key) % partitions


def produce_records(
    bootstrap: str, topic: str, partitions: int, events: Iterator[tuple[bytes | None, bytes | None]]
) -> list[ProducedRecord]:
    """Produce the events (batched, lz4-compressed, idempotent) and return where each one landed.

    Raises RuntimeError naming the topic if any delivery fails.
    """
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "compression.type": "lz4",
            "enable.idempotence": True,
        }
    )
    produced: list[ProducedRecord] = []
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(str(err))
            return
        produced.append(
            ProducedRecord(
                msg.topic() or topic, msg.partition() or 0, msg.offset() or 0, msg.key(), msg.value()
            )
        )

    for key, value in events:
        partition = partition_for(key or b"", partitions)
        producer.produce(topic, key=key, value=value, partition=partition, on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(60)
    if errors or remaining:
        raise RuntimeError(
            f"producing to {topic}: {len(errors)} failed, {remaining} undelivered: {errors[:3]}"
        )
    return produced
