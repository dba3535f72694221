"""Throwaway resources of the reserve + commit benchmark on the local stack: ledger
databases, topics of many partitions with a few records each, and the stack's Airflow
connections in the environment. Each is removed when its ``with`` block ends.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from eo_devtools.stack.scratch_database import scratch_database as scratch_postgres_database
from eo_devtools.stack.stack import LocalStack

PARTITIONS_PER_TOPIC = 1000


@contextmanager
def kafka_connection(stack: LocalStack) -> Iterator[None]:
    """The stack's ``AIRFLOW_CONN_EO_KAFKA`` (and its other connections) set meanwhile."""
    saved = {name: os.environ.get(name) for name in stack.conn_env()}
    os.environ.update(stack.conn_env())
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def scratch_database(server_dsn: str) -> AbstractContextManager[str]:
    """A throwaway ledger database ``eo_bench_<uuid>`` on the stack's PostgreSQL: its DSN."""
    return scratch_postgres_database(server_dsn, prefix="eo_bench")


@contextmanager
def scratch_topics(bootstrap: str, partitions: int, *, records: int) -> Iterator[list[tuple[str, int]]]:
    """``partitions`` partitions over topics of at most 1,000, ``records`` records in each;
    deleted afterwards."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    counts = [
        min(PARTITIONS_PER_TOPIC, partitions - start) for start in range(0, partitions, PARTITIONS_PER_TOPIC)
    ]
    topics = [(f"eo-bench-rc-{uuid.uuid4().hex[:8]}", count) for count in counts]
    small_index = {"segment.index.bytes": "65536", "segment.bytes": str(16 * 1024 * 1024)}
    try:
        for topic, count in topics:  # one at a time: KRaft refuses > 10,000 records per request
            futures = admin.create_topics(
                [NewTopic(topic, count, 1, config=small_index)], request_timeout=300
            )
            futures[topic].result(timeout=600)
        _await_metadata(admin, topics)
        _produce(bootstrap, topics, records)
        yield topics
    finally:
        for topic, _ in topics:
            _wait_quietly(admin.delete_topics([topic], request_timeout=300)[topic].result)


def _await_metadata(admin: AdminClient, topics: list[tuple[str, int]], timeout_s: float = 600) -> None:
    """Wait until the broker's metadata shows every partition of ``topics`` with a leader."""
    deadline = time.monotonic() + timeout_s
    while True:
        metadata = admin.list_topics(timeout=30).topics
        ready = all(
            topic in metadata
            and len(metadata[topic].partitions) == count
            and all(p.leader >= 0 for p in metadata[topic].partitions.values())
            for topic, count in topics
        )
        if ready:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"benchmark topics not ready within {timeout_s:g}s")
        time.sleep(1)


def _produce(bootstrap: str, topics: list[tuple[str, int]], records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "acks": "all"})
    for topic, count in topics:
        for partition in range(count):
            for i in range(records):
                while True:
                    try:
                        producer.produce(topic, value=b'{"n": %d}' % i, key=b"k%d" % i, partition=partition)
                        break
                    except BufferError:  # the local queue is full: let deliveries drain it
                        producer.poll(0.5)
                producer.poll(0)
    if producer.flush(600) != 0:
        raise RuntimeError("benchmark records not delivered within 600 s")


def _wait_quietly(result: Callable[..., Any]) -> None:
    try:
        result(timeout=300)
    except Exception as exc:  # a topic left behind is logged, not fatal to the figures
        logging.getLogger(__name__).warning("benchmark topic not deleted: %s", exc)
