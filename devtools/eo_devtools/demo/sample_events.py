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


#: The largest record :func:`big_sample_events` makes: near the default ``max_record_bytes``
#: (1 MiB) and within a default broker's ``message.max.bytes`` (1,048,588 per record batch).
NEAR_LIMIT_BYTES = 1_040_000


def big_sample_events(
    count: int, *, users: int = 50, seed: int = 7, share: float = 0.4
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """:func:`sample_events` where about ``share`` of the JSON updates carry a ``blob`` field that
    brings the record (key plus value) to between 100 KB and :data:`NEAR_LIMIT_BYTES`; the blob is
    random hex, which lz4 cannot shrink (big records compress poorly in practice)."""
    rng = random.Random(seed ^ 0xB16)
    for key, value in sample_events(count, users=users, seed=seed):
        if key is None or value is None or not value.startswith(b'{"seq"') or rng.random() >= share:
            yield key, value
            continue
        event = json.loads(value)
        size = rng.randrange(100_000, NEAR_LIMIT_BYTES + 1)
        room = size - len(key) - len(value) - len(',"blob":""')
        event["blob"] = rng.randbytes(room // 2).hex()
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
            "message.max.bytes": 1_048_588,  # a default broker's limit: near-limit records fit
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
