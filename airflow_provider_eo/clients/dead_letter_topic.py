"""The Kafka side of a pipeline's dead-letter topic: a transactional producer and its marker.

:class:`DeadLetterTopic` does what ``ledger/protocol/dead_letter_publication.py`` asks, nothing more:

* :meth:`~DeadLetterTopic.open` calls ``init_transactions()`` with the transactional id
  ``eo-dead-letters.<pipeline>`` (which fences any older producer of that pipeline and
  aborts its open transaction), then reads the marker: the committed offset of the marker
  group (``<group_id>.dead-letters``) on ``(topic, 0)``, read ``read_committed``;
  0 when it has none.
* :meth:`~DeadLetterTopic.publish` produces a batch of records and moves the marker to
  ``marker`` in ONE Kafka transaction (``send_offsets_to_transaction``): both become
  visible, or neither.

It creates nothing: a missing topic is :class:`DeadLetterTopicMissing` naming pipeline and
topic. Client settings come from the Kafka connection exactly as :class:`EoKafkaHook`
builds them (``clients/connection_settings.py``), so TLS/SASL reach this producer too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eo import protocol_points
from airflow_provider_eo.clients.connection_settings import KafkaClientConfig
from airflow_provider_eo.clients.kafka_errors import ClientErrorLog, EoKafkaError
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import OutgoingRecord

log = logging.getLogger(__name__)

#: The partition whose committed offset in the marker group is the marker.
MARKER_PARTITION = 0


class DeadLetterTopicMissing(EoKafkaError):
    """The pipeline's ``dead_letters.topic`` does not exist (nothing creates it)."""


def transactional_id(pipeline: str) -> str:
    """The producer's ``transactional.id``: one per pipeline, so a new publisher fences the old."""
    return f"eo-dead-letters.{pipeline}"


class DeadLetterTopic:
    """One pipeline's dead-letter topic; use as a context manager (or call :meth:`close`).

    :param pipeline: the pipeline's name (names the transactional id).
    :param topic: the dead-letter topic.
    :param marker_group: the consumer group holding the marker.
    :param settings: librdkafka settings and call timeout (``kafka_client_config``).
    """

    @classmethod
    def of_pipeline(cls, spec: PipelineSpec, settings: KafkaClientConfig) -> DeadLetterTopic:
        """``spec``'s dead-letter topic, its marker group named by
        :meth:`DeadLettersSpec.marker_group`; ``ValueError`` for a spec without one."""
        if spec.dead_letters is None:
            raise ValueError(f"pipeline {spec.name!r} has no dead_letters.topic")
        group = spec.dead_letters.marker_group(spec.group_id)
        return cls(spec.name, spec.dead_letters.topic, group, settings)

    def __init__(self, pipeline: str, topic: str, marker_group: str, settings: KafkaClientConfig) -> None:
        self.pipeline = pipeline
        self.topic = topic
        self.marker_group = marker_group
        self.settings = settings
        self._errors = ClientErrorLog()
        self._producer: Producer | None = None

    def __enter__(self) -> DeadLetterTopic:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _config(self, **more: Any) -> dict[str, Any]:
        return {**self.settings.config, "error_cb": self._errors, **more}

    def open(self) -> int:
        """Check the topic, take over the transactional id (fencing and aborting any older
        producer's open transaction), then return the marker: the first ``publish_seq``
        the topic does not have. Raises :class:`DeadLetterTopicMissing` or
        :class:`EoKafkaError` naming pipeline and topic."""
        self._check_topic()
        producer = Producer(
            self._config(
                **{
                    "transactional.id": transactional_id(self.pipeline),
                    "enable.idempotence": True,
                    "linger.ms": 5,
                }
            )
        )
        try:
            producer.init_transactions(self.settings.timeout_s)
        except KafkaException as exc:
            raise self._error("cannot initialize the transactional producer", exc, producer) from exc
        self._producer = producer
        return self.marker()

    def marker(self) -> int:
        """The marker group's committed offset on ``(topic, 0)`` (0 when none), read
        ``read_committed`` (a pending transactional commit is waited for, never read)."""
        consumer = Consumer(
            self._config(
                **{
                    "group.id": self.marker_group,
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed",
                }
            )
        )
        deadline = time.monotonic() + self.settings.timeout_s
        try:
            while True:
                try:
                    answer = consumer.committed(
                        [TopicPartition(self.topic, MARKER_PARTITION)],
                        timeout=max(0.5, deadline - time.monotonic()),
                    )
                    break
                except KafkaException as exc:
                    if time.monotonic() >= deadline:
                        raise self._error(
                            f"cannot read the marker of group {self.marker_group!r}", exc
                        ) from exc
                    time.sleep(0.2)
        finally:
            consumer.close()
        offset = answer[0].offset
        return int(offset) if offset >= 0 else 0

    def publish(self, records: Sequence[OutgoingRecord], marker: int) -> None:
        """Produce ``records`` and commit the marker ``marker`` in one Kafka transaction.

        Passes the protocol point ``dead_letters.before_commit`` just before
        ``commit_transaction``. Raises :class:`EoKafkaError` (the transaction is aborted
        when it can be; otherwise the next :meth:`open` aborts it) on any failure.
        """
        producer = self._producer
        if producer is None:
            raise RuntimeError("DeadLetterTopic.publish before open")
        try:
            group_metadata = self._group_metadata()
            producer.begin_transaction()
            for record in records:
                self._produce(producer, record)
            producer.send_offsets_to_transaction(
                [TopicPartition(self.topic, MARKER_PARTITION, marker)],
                group_metadata,
                self.settings.timeout_s,
            )
            protocol_points.passed("dead_letters.before_commit")
            producer.commit_transaction(self.settings.timeout_s)
        except (KafkaException, BufferError) as exc:
            try:
                producer.abort_transaction(self.settings.timeout_s)
            except KafkaException:
                log.warning("abort of the dead-letter transaction failed pipeline=%s", self.pipeline)
            raise self._error(f"cannot publish up to {marker}", exc, producer) from exc

    def _produce(self, producer: Producer, record: OutgoingRecord) -> None:
        while True:
            try:
                headers: list[tuple[str, str | bytes | None]] = list(record.headers)
                producer.produce(self.topic, value=record.value, key=record.key, headers=headers)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)

    def _group_metadata(self) -> Any:
        consumer = Consumer(self._config(**{"group.id": self.marker_group, "enable.auto.commit": False}))
        try:
            return consumer.consumer_group_metadata()
        finally:
            consumer.close()

    def _check_topic(self) -> None:
        admin = AdminClient(self._config())
        try:
            metadata = admin.list_topics(timeout=self.settings.timeout_s)  # all: never auto-creates
        except KafkaException as exc:
            raise self._error("cannot read the topic's metadata", exc, admin) from exc
        meta = metadata.topics.get(self.topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise DeadLetterTopicMissing(
                f"pipeline {self.pipeline!r}: dead-letter topic {self.topic!r} does not exist "
                "(create it; nothing creates it automatically)"
            )

    def _error(self, what: str, exc: Exception, client: Any = None) -> EoKafkaError:
        why = f"{exc}{self._errors.explain(client)}"
        return EoKafkaError(f"pipeline {self.pipeline!r} dead-letter topic {self.topic!r}: {what}: {why}")

    def close(self) -> None:
        """Drop the producer (an open transaction is left to the next :meth:`open` to abort)."""
        if self._producer is not None:
            self._producer.flush(0)
            self._producer = None
