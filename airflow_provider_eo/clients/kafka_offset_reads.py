"""Kafka's offsets read without Airflow: the admin and consumer clients the Kafka hook and
the audit's Spark driver share, and :class:`KafkaOffsetReads` (watermarks, a group's
committed offsets) for the driver, which must not import Airflow.

Contract: :func:`new_admin` never lets a metadata request create a topic;
:func:`read_consumer` reads ``read_committed`` and never commits (auto-commit off), and is
closed when its block ends. Both report client errors to ``errors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from airflow_provider_eo.clients.connection_settings import KafkaClientConfig
from airflow_provider_eo.clients.kafka_errors import ClientErrorLog
from airflow_provider_eo.clients.kafka_group_offsets import GroupOffsets
from airflow_provider_eo.clients.kafka_watermarks import TP, WatermarkReader


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


class KafkaOffsetReads:
    """Watermarks and a group's committed offsets through ``settings`` (reads only)."""

    def __init__(self, settings: KafkaClientConfig) -> None:
        self.settings = settings
        self.errors = ClientErrorLog()

    def _admin(self) -> AdminClient:
        return new_admin(self.settings, self.errors)

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
