"""Publishing a pipeline's committed dead letters to its dead-letter topic, exactly once.

The argument (docs/dead_letters.md):

* Every committed dead letter has a ``publish_seq`` (0, 1, 2, ... per pipeline), assigned
  once, in the transaction that commits its epoch (``store/dead_letter_rows.py``).
* How far the topic has the pipeline's letters is a *marker* kept IN KAFKA: the committed
  offset of the marker group ``<group_id>.dead-letters`` on ``(topic, 0)``, the first
  ``publish_seq`` the topic lacks. Each batch of letters ``[M, N)`` and the move of the
  marker to ``N`` are ONE Kafka transaction: both become visible, or neither.
* A publication first takes over the pipeline's transactional id (``init_transactions``:
  an older publisher is fenced, its open transaction aborted), THEN reads the marker, then
  publishes the ledger's letters from the marker on. Whatever crashed before, the marker
  says exactly what the topic holds; a zombie publisher can commit nothing any more.

The ledger is only read here: nothing of the decision lives in PostgreSQL but the order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_provider_eo import protocol_points
from airflow_provider_eo.ledger.model.epoch import OutgoingRecord, SequencedDeadLetter
from airflow_provider_eo.ledger.model.ledger_roles import ScriptTransactions
from airflow_provider_eo.ledger.store.dead_letter_rows import dead_letters_to_publish

log = logging.getLogger(__name__)

#: One Kafka transaction carries at most this many letters ...
BATCH_RECORDS = 500
#: ... and about this many bytes of raw key and value (one letter whatever its size).
BATCH_BYTES = 4 * 1024 * 1024

#: The headers each record carries besides its original ones (Kafka Connect style names).
ERROR_CLASS = "__eo.errors.class"
ERROR_MESSAGE = "__eo.errors.message"
SOURCE_TOPIC = "__eo.source.topic"
SOURCE_PARTITION = "__eo.source.partition"
SOURCE_OFFSET = "__eo.source.offset"
SOURCE_TIMESTAMP = "__eo.source.timestamp"
PIPELINE = "__eo.pipeline"
EPOCH_ID = "__eo.epoch_id"
SCHEMA_ID = "__eo.schema_id"


class DeadLetterTopicPort(Protocol):
    """The Kafka side (``clients.dead_letter_topic.DeadLetterTopic``)."""

    def open(self) -> int:
        """Fence older publishers (``init_transactions``), then return the marker."""

    def publish(self, records: Sequence[OutgoingRecord], marker: int) -> None:
        """Produce ``records`` and move the marker to ``marker`` in one Kafka transaction."""

    def close(self) -> None:
        """Release the producer."""


@dataclass(frozen=True)
class DeadLetterPublication:
    """What one publication did: ``published`` letters, the marker before and after
    (``marker_after - marker_before == published`` unless prune removed letters never
    published); ``topic`` None: the pipeline has no dead-letter topic, nothing was done."""

    pipeline: str
    topic: str | None
    published: int
    marker_before: int
    marker_after: int

    def to_json(self) -> dict[str, Any]:
        """``{pipeline, topic, published, marker_before, marker_after}``."""
        return {
            "pipeline": self.pipeline,
            "topic": self.topic,
            "published": self.published,
            "marker_before": self.marker_before,
            "marker_after": self.marker_after,
        }


def letter_record(item: SequencedDeadLetter) -> OutgoingRecord:
    """The topic's record of one dead letter: the original key, value and headers, then
    the ``__eo.*`` headers (values UTF-8 text; ``__eo.schema_id`` only when known,
    ``__eo.source.timestamp`` only when the record had one)."""
    d = item.letter
    extra: list[tuple[str, Any]] = [
        (ERROR_CLASS, d.error_class or "BadRecord"),
        (ERROR_MESSAGE, d.error),
        (SOURCE_TOPIC, d.topic),
        (SOURCE_PARTITION, d.partition),
        (SOURCE_OFFSET, d.offset),
        (SOURCE_TIMESTAMP, d.timestamp),
        (PIPELINE, d.pipeline),
        (EPOCH_ID, d.epoch_id),
        (SCHEMA_ID, d.schema_id),
    ]
    headers = list(d.headers or [])
    headers += [(name, str(value).encode()) for name, value in extra if value is not None]
    return OutgoingRecord(d.key, d.value, headers)


def publish_dead_letters(
    ledger: ScriptTransactions,
    pipeline: str,
    topic_name: str,
    topic: DeadLetterTopicPort,
    *,
    batch_records: int = BATCH_RECORDS,
    batch_bytes: int = BATCH_BYTES,
) -> DeadLetterPublication:
    """Publish ``pipeline``'s committed dead letters the topic lacks, in publish order, one
    Kafka transaction per batch (at most ``batch_records`` letters, about ``batch_bytes``).

    Safe to call any time, from anywhere, any number of times, concurrently: the topic gets
    each letter once. Raises what the topic raises (``EoKafkaError``: the batch in flight
    is not visible, the earlier ones are and the marker says so); ``topic`` is closed.
    """
    published = 0
    try:
        before = topic.open()
        marker = before
        while True:
            with ledger.transaction() as cur:
                batch = dead_letters_to_publish(cur, pipeline, marker, batch_records, batch_bytes)
            if not batch:
                break
            end = batch[-1].publish_seq + 1
            topic.publish([letter_record(item) for item in batch], end)
            protocol_points.passed("dead_letters.after_commit")
            log.info(
                "published dead letters pipeline=%s topic=%s publish_seq=[%d,%d) records=%d epochs=%s",
                pipeline, topic_name, marker, end, len(batch),
                ",".join(sorted({str(item.letter.epoch_id) for item in batch})),
            )  # fmt: skip
            marker = end
            published += len(batch)
    finally:
        topic.close()
    return DeadLetterPublication(pipeline, topic_name, published, before, marker)
