"""Kafka's offsets read without Airflow: the admin and consumer clients the Kafka hook and
the audit's Spark driver share, and :class:`KafkaOffsetReads` (watermarks, a group's
committed offsets) for the driver, which must not import Airflow.

Contract: :func:`new_admin` never lets a metadata request create a topic;
:func:`read_consumer` reads ``read_committed`` and never commits (auto-commit off), and is
closed when its block ends. Both report client errors to ``errors``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eo.clients.connection_settings import KafkaClientConfig
from airflow_provider_eo.clients.kafka_errors import ClientErrorLog, EoKafkaError
from airflow_provider_eo.clients.kafka_group_offsets import GroupOffsets
from airflow_provider_eo.clients.kafka_watermarks import TP, WatermarkReader

#: The group id of read-only consumers (never committed to).
PROBE_GROUP = "airflow-provider-eo-probe"


def _unknown_topic(error: object) -> bool:
    return isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def new_admin(settings: KafkaClientConfig, errors: ClientErrorLog) -> AdminClient:
    """An admin client of ``settings``; a metadata request naming a topic never creates it."""
    conf: dict[str, Any] = {**settings.config, "allow.auto.create.topics": False}
    conf["error_cb"] = errors
    return AdminClient(conf)


@contextmanager
def read_consumer(settings: KafkaClientConfig, group_id: str, errors: ClientErrorLog) -> Iterator[Consumer]:
    """A consumer of ``group_id`` that reads as the range reader reads (``read_committed``,
    so watermarks end at the last stable offset) and never commits by itself."""
    conf: dict[str, Any] = {**settings.config, "group.id": group_id, "enable.auto.commit": False}
    conf["isolation.level"] = "read_committed"
    conf["error_cb"] = errors
    consumer = Consumer(conf)
    try:
        yield consumer
    finally:
        consumer.close()


def list_partitions(
    admin: AdminClient,
    settings: KafkaClientConfig,
    errors: ClientErrorLog,
    conn_id: str,
    topics: Iterable[str] | None,
    pattern: str | None,
) -> list[TP]:
    """Sorted (topic, partition) of the named ``topics`` plus every topic whose name
    fully matches the regex ``pattern`` in the current cluster metadata. Internal
    topics (``__*``) never match the pattern. A named topic that does not exist, or
    a topic whose metadata carries an error, raises :class:`EoKafkaError`.

    Without a pattern only the named topics' metadata is asked for (one request per
    topic), not the whole cluster's; no request ever creates a topic."""
    wanted = set(topics or ())
    try:
        if pattern:
            found = dict(admin.list_topics(timeout=settings.timeout_s).topics)
        else:
            found = {t: admin.list_topics(t, timeout=settings.timeout_s).topics[t] for t in wanted}
    except KafkaException as exc:
        why = f"{exc}{errors.explain(admin)}"
        raise EoKafkaError(f"Kafka connection {conn_id!r}: cannot list topics: {why}") from exc
    missing = sorted(t for t in wanted if t not in found or _unknown_topic(found[t].error))
    if missing:
        raise EoKafkaError(f"topic(s) not found: {', '.join(missing)}")
    if pattern:
        regex = re.compile(pattern)
        wanted |= {t for t in found if not t.startswith("__") and regex.fullmatch(t)}
    result: list[TP] = []
    for topic in sorted(wanted):
        meta = found[topic]
        if meta.error is not None:
            raise EoKafkaError(f"topic {topic!r}: metadata error {meta.error}")
        result.extend((topic, p) for p in sorted(meta.partitions))
    return result


def offsets_for_timestamp(
    consumer_block: AbstractContextManager[Consumer],
    settings: KafkaClientConfig,
    errors: ClientErrorLog,
    tps: Iterable[TP],
    ts_ms: int,
    watermarks: Callable[[Iterable[TP]], dict[TP, tuple[int, int]]],
) -> dict[TP, int]:
    """Per partition, the first offset whose record timestamp is >= ``ts_ms``; the
    high watermark where no such record exists."""
    tps = list(tps)
    if not tps:
        return {}
    query = [TopicPartition(t, p, int(ts_ms)) for t, p in tps]
    with consumer_block as consumer:
        try:
            answer = consumer.offsets_for_times(query, timeout=settings.timeout_s)
        except KafkaException as exc:
            why = f"{exc}{errors.explain(consumer)}"
            raise EoKafkaError(f"offsets for timestamp {ts_ms} of {list(tps)}: {why}") from exc
    result: dict[TP, int] = {}
    ends: list[TP] = []
    for tp in answer:
        if tp.error is not None:
            raise EoKafkaError(f"offset for timestamp {ts_ms} of {tp.topic}[{tp.partition}]: {tp.error}")
        if tp.offset < 0:
            ends.append((tp.topic, tp.partition))
        else:
            result[(tp.topic, tp.partition)] = int(tp.offset)
    for tp_key, (_, high) in watermarks(ends).items():
        result[tp_key] = high
    return result


class KafkaOffsetReads:
    """Watermarks and a group's committed offsets through ``settings`` (reads only)."""

    def __init__(self, settings: KafkaClientConfig) -> None:
        self.settings = settings
        self.errors = ClientErrorLog()

    def _admin(self) -> AdminClient:
        return new_admin(self.settings, self.errors)

    def list_partitions(self, topics: Iterable[str] | None, pattern: str | None) -> list[TP]:
        """:func:`list_partitions` with an admin client of its own."""
        return list_partitions(self._admin(), self.settings, self.errors, "audit", topics, pattern)

    def offsets_for_timestamp(self, tps: Iterable[TP], ts_ms: int) -> dict[TP, int]:
        """:func:`offsets_for_timestamp` with a read-only consumer of its own."""
        return offsets_for_timestamp(
            read_consumer(self.settings, PROBE_GROUP, self.errors), self.settings, self.errors, tps, ts_ms,
            self.watermarks,
        )  # fmt: skip

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        """(low, high) of each partition, ``high`` its last stable offset (:class:`WatermarkReader`)."""
        return WatermarkReader(self._admin, self.settings.timeout_s, self.errors).read(tps)

    def committed_offsets(self, group_id: str, tps: Iterable[TP]) -> dict[TP, int | None]:
        """The group's committed offset per partition, None where it has none (:class:`GroupOffsets`)."""

        def consumer(group: str) -> Any:
            return read_consumer(self.settings, group, self.errors)

        return GroupOffsets(group_id, consumer, self._admin, self.settings.timeout_s, self.errors).committed(
            tps
        )
