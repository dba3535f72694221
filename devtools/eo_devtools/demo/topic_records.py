"""The demo's topics: created once, read back whole (every record the demo ever produced), and
the dead-letter topic's records counted.

The demo serves the repository's ``demo_events`` pipeline, whose topic outlives one demo
run; the verification compares HBase, the ledger and the consumer group with *all* its
records, so every rerun is checked as exactly as the first.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from eo_devtools.demo.expected_state import ProducedRecord


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> int:
    """Create ``topic`` with ``partitions`` partitions unless it exists; returns its partition count.

    Raises RuntimeError naming the topic on failure.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(topic, timeout=30).topics.get(topic)
    if existing is not None and existing.error is None:
        return len(existing.partitions)
    futures = admin.create_topics([NewTopic(topic, partitions)])  # the cluster's replication factor
    try:
        futures[topic].result(30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise RuntimeError(f"creating topic {topic} with {partitions} partitions: {exc}") from exc
    return partitions


def read_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float = 120) -> list[ProducedRecord]:
    """Every record of ``topic`` (each partition from its low to its high watermark).

    Raises RuntimeError when a partition cannot be read to its end within ``timeout_s``.
    """
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "eo-demo-reader", "enable.auto.commit": False}
    )
    records: list[ProducedRecord] = []
    try:
        ends = {}
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
            if high > low:
                ends[partition] = (low, high)
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
        remaining = {p for p in ends}
        while remaining:
            message = consumer.poll(timeout_s)
            if message is None:
                raise RuntimeError(f"reading {topic}: partitions {sorted(remaining)} not read to their end")
            if message.error():
                raise RuntimeError(f"reading {topic}: {message.error()}")
            partition, offset = message.partition() or 0, message.offset() or 0
            records.append(ProducedRecord(topic, partition, offset, message.key(), message.value()))
            if offset + 1 >= ends[partition][1]:
                remaining.discard(partition)
                consumer.incremental_unassign([TopicPartition(topic, partition)])
    finally:
        consumer.close()
    return records


def count_committed_records(bootstrap: str, topic: str, timeout_s: float = 60) -> int:
    """How many records of ``topic`` (every partition) a ``read_committed`` consumer sees:
    a dead-letter topic's letters (control markers and aborted records are not counted).

    Raises RuntimeError when the topic cannot be read to its end within ``timeout_s``.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "eo-demo-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    count = 0
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        remaining = set(partitions)
        deadline = time.monotonic() + timeout_s
        while remaining:
            message = consumer.poll(1)
            if time.monotonic() > deadline:
                raise RuntimeError(f"counting {topic}: partitions {sorted(remaining)} not read to their end")
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                remaining.discard(message.partition())
            elif error is not None:
                raise RuntimeError(f"counting {topic}: {error}")
            else:
                count += 1
    finally:
        consumer.close()
    return count
