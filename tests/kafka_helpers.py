"""Kafka helpers for tests: a normally batching, compressing producer and a range reader."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress

from confluent_kafka import Consumer, Producer, TopicPartition

BATCHING_PRODUCER = {"linger.ms": 5, "compression.type": "lz4", "enable.idempotence": True}
"""How the tests' producers send: batched (many records per batch), lz4-compressed, idempotent."""

Record = tuple[bytes | str | None, bytes | str | None]


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[Record],
    *,
    partition: int | None = None,
    headers: list[tuple[str, bytes]] | None = None,
) -> int:
    """Produce ``(key, value)`` records in order (batched and compressed) and flush; return the count.

    Raises RuntimeError naming topic and error when any delivery fails.
    """
    producer = Producer({"bootstrap.servers": bootstrap, **BATCHING_PRODUCER})
    errors: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    count = 0
    for key, value in records:
        kwargs: dict[str, object] = {"key": key, "value": value, "on_delivery": on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        if headers is not None:
            kwargs["headers"] = headers
        producer.produce(topic, **kwargs)  # type: ignore[arg-type]
        producer.poll(0)
        count += 1
    remaining = producer.flush(30)
    if errors or remaining:
        raise RuntimeError(f"produce to {topic}: {remaining} undelivered, errors: {errors[:3]}")
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


@contextmanager
def hang_up_listener() -> Iterator[str]:
    """``host:port`` of a TCP listener that closes every connection on its first bytes,
    as Apache Kafka's plaintext listener does with a TLS ClientHello (Tansu instead waits
    for the rest of a frame, so a TLS client times out without a cause)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                with suppress(OSError):
                    conn.recv(1024)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        server.close()
