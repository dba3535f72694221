"""Helpers of the dead-letter topic tests: a pipeline with bad records and its dead-letter
topic (3 partitions) on the real stack, a ``read_committed`` reader of every partition of
that topic, publications.

Letters go to the dead-letter topic's partitions by their original key (docs/dead_letters.md):
confluent-kafka's default partitioner (librdkafka ``consistent_random``) puts a record with
a non-empty key on partition ``crc32(key) % partitions``; :func:`by_key_partition` lays out
the expected records that way, so a test compares every partition's exact contents."""

from __future__ import annotations

import time
import uuid
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import happybase
import psycopg2
import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, TopicPartition

from airflow_provider_eo.clients.connection_settings import KafkaClientConfig
from airflow_provider_eo.clients.dead_letter_topic import DeadLetterTopic
from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.epoch import OutgoingRecord
from airflow_provider_eo.ledger.protocol import EpochProtocol
from airflow_provider_eo.ledger.protocol.dead_letter_publication import DeadLetterPublication
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import (
    EpochRoundTrip,
    kafka_connection,
    ledger_connection,
    pipeline_spec,
)
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import created_topic

#: What the topic holds: (key, value, headers) per record, in topic order.
TopicRecord = tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]
#: Partitions of every dead-letter topic the tests create.
DEAD_LETTER_PARTITIONS = 3


def by_key_partition(
    records: Sequence[TopicRecord], partitions: int = DEAD_LETTER_PARTITIONS
) -> dict[int, list[TopicRecord]]:
    """``records`` (in publication order) laid out as a topic of ``partitions`` holds them:
    partition ``crc32(key) % partitions`` (librdkafka's ``consistent_random`` for a non-empty
    key), each partition in publication order; every partition present, empty ones too."""
    layout: dict[int, list[TopicRecord]] = {p: [] for p in range(partitions)}
    for record in records:
        assert record[0], "a record without a key goes to a random partition: no exact layout"
        layout[zlib.crc32(record[0]) % partitions].append(record)
    return layout


@dataclass
class World:
    """One pipeline (``bad_records: dead_letter``) reading ``source``, publishing to ``dlq``."""

    stack: StackInfo
    ledger_dsn: str
    source: str
    dlq: str
    spec: PipelineSpec
    trip: EpochRoundTrip

    def topic(self) -> DeadLetterTopic:
        """A fresh publisher of the pipeline's dead-letter topic (the stack's broker)."""
        assert self.spec.dead_letters is not None
        settings = KafkaClientConfig({"bootstrap.servers": self.stack.kafka_bootstrap}, 15.0)
        group = self.spec.dead_letters.marker_group(self.spec.group_id)
        return DeadLetterTopic(self.spec.name, self.dlq, group, settings)

    def protocol(self, ledger: Ledger) -> EpochProtocol:
        """The protocol over ``ledger`` with this world's topic (and the round trip's Kafka hook)."""
        return EpochProtocol(
            ledger, kafka=lambda: self.trip.kafka, dead_letter_topics=lambda _spec: self.topic()
        )

    def publish(self) -> DeadLetterPublication:
        """One publication, as the commit step runs it."""
        with Ledger(self.ledger_dsn) as ledger:
            return self.protocol(ledger).publish_dead_letters(self.spec)

    def read(self) -> dict[int, list[TopicRecord]]:
        """Every record of every partition of the dead-letter topic a ``read_committed``
        consumer sees, by partition (compare with :func:`by_key_partition`)."""
        return read_committed(self.stack.kafka_bootstrap, self.dlq)

    def pipelines_file(self, folder: Path) -> Path:
        """A pipelines YAML declaring this world's pipeline (for operators and eo-ledger)."""
        assert self.spec.dead_letters is not None
        entry = {
            "name": self.spec.name, "topics": [self.source], "hbase": {"table": self.spec.hbase_table},
            "bad_records": "dead_letter", "dead_letters": {"topic": self.dlq},
        }  # fmt: skip
        file = folder / f"{self.spec.name}.yaml"
        file.write_text(yaml.safe_dump({"pipelines": [entry]}))
        return file

    def marker(self) -> int:
        """The marker group's committed offset (0: none)."""
        return self.topic().marker()


class HeldBack:
    """The round trip's dead-letter "topic": its commits leave the publication to the test,
    as a crash right after the ledger's commit would (the letters numbered, none sent, the
    real marker untouched). The publication tests then drive the real topic themselves
    (``World.publish``, ``World.protocol``); the commit task's and recovery's own
    publications are tested through the real topic (``test_dead_letter_topic.py``,
    ``test_commit_paths.py``)."""

    def open(self) -> int:
        return 0

    def publish(self, records: Sequence[OutgoingRecord], marker: int) -> None:
        """Nothing is sent."""

    def close(self) -> None:
        """Nothing to release."""


@contextmanager
def dead_letter_world(
    stack: StackInfo, ledger_dsn: str, *, partitions: int = 1, **options: object
) -> Iterator[World]:
    """A fresh source topic (``partitions``), dead-letter topic, HBase table and pipeline
    (``options``: more YAML)."""
    suffix = uuid.uuid4().hex[:8]
    table = f"dlq_{suffix}"
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(table, {"d": {"max_versions": 3}})
    hbase.close()  # the Thrift server drops idle connections: a long module's teardown opens its own
    try:
        with (
            created_topic(stack.kafka_bootstrap, partitions, prefix="dlq-src") as source,
            created_topic(stack.kafka_bootstrap, DEAD_LETTER_PARTITIONS, prefix="dlq") as dlq,
        ):
            yaml_options = {"bad_records": "dead_letter", "dead_letters": {"topic": dlq}, **options}
            spec = pipeline_spec(f"dlq_{suffix}", source, table, **yaml_options)
            env = {
                **stack.conn_env,
                "AIRFLOW_CONN_EO_LEDGER": ledger_connection(ledger_dsn),
                "AIRFLOW_CONN_EO_KAFKA": kafka_connection(stack.kafka_bootstrap),
            }
            trip = EpochRoundTrip(spec, ledger_dsn, env, dead_letter_topics=lambda _spec: HeldBack())
            yield World(stack, ledger_dsn, source, dlq, spec, trip)
    finally:
        hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
        hbase.delete_table(table, disable=True)
        hbase.close()


def read_committed(bootstrap: str, topic: str) -> dict[int, list[TopicRecord]]:
    """Every record of every partition of ``topic`` up to its last stable offset,
    ``read_committed``: partition -> records in offset order (empty partitions included)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"eo-test-dlq-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    out: dict[int, list[TopicRecord]] = {}
    deadline = time.monotonic() + 30
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=15).topics[topic].partitions)
        out = {p: [] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        remaining = set(partitions)
        while remaining and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    remaining.discard(msg.partition())
                    continue
                raise RuntimeError(f"read {topic}: {error}")
            out[msg.partition()].append((msg.key(), msg.value(), list(msg.headers() or [])))
    finally:
        consumer.close()
    if remaining:
        raise AssertionError(
            f"read {topic}: partitions {sorted(remaining)} not read to their end within 30 s"
        )
    return out


def dead_letter_rows(dsn: str, pipeline: str) -> list[tuple[Any, ...]]:
    """``(offset, epoch_id, resolved_by_epoch, resolved, the error's first 30 characters)``
    per dead letter of ``pipeline``, by offset, read straight from ``eo.dead_letters``."""
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            'SELECT "offset", epoch_id, resolved_by_epoch, resolved_at IS NOT NULL, left(error, 30)'
            ' FROM eo.dead_letters WHERE pipeline = %s ORDER BY "offset"',
            (pipeline,),
        )
        rows: list[tuple[Any, ...]] = cur.fetchall()
    conn.close()
    return rows


def replay_selection_rows(dsn: str, epoch_id: int) -> list[tuple[str, int, int]]:
    """``(topic, partition, offset)`` of ``eo.replay_selections`` for ``epoch_id``, in order."""
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            'SELECT topic, "partition", "offset" FROM eo.replay_selections WHERE epoch_id = %s'
            " ORDER BY 1, 2, 3",
            (epoch_id,),
        )
        rows: list[tuple[str, int, int]] = cur.fetchall()
    conn.close()
    return rows


@pytest.fixture(scope="module", name="ledger_dsn")
def ledger_dsn_fixture(stack: StackInfo) -> Iterator[str]:
    """A scratch ledger database for the module (import the fixture to use it)."""
    with fresh_database(stack.ledger_dsn) as dsn:
        yield dsn


@pytest.fixture(name="world")
def world_fixture(stack: StackInfo, ledger_dsn: str) -> Iterator[World]:
    """A fresh :func:`dead_letter_world` per test (import the fixture to use it)."""
    with dead_letter_world(stack, ledger_dsn) as made:
        yield made
