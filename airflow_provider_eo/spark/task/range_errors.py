"""Why a range read stops short of its end: :class:`RangeReadError` and its explanations.

Every message names topic, partition, the offset reached and the range's end
(``cannot read T partition P up to end offset E: reached offset O (range [S, E)): why``);
the ``why`` helpers here say what the broker and librdkafka reported: an oversized record
batch, a partition EOF below the end (missing data, or the last stable offset of an
undecided transaction), no progress (a deleted topic or partition, else the broker).
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from airflow_provider_eo.clients.kafka_errors import ClientErrorLog
from airflow_provider_eo.errors import KafkaAccessError
from airflow_provider_eo.spark.records import TaskRange


class RangeReadError(KafkaAccessError, RuntimeError):
    """The range could not be read up to its end; the message says where and why."""


class ReaderErrors(ClientErrorLog):
    """The client error log, also keeping librdkafka's refusal of an oversized fetch response."""

    oversized: str | None = None

    def __call__(self, error: Any) -> None:
        super().__call__(error)
        text = str(error.str())
        if error.code() == KafkaError._BAD_MSG and "receive.message.max.bytes" in text:
            self.oversized = text


def oversized_failure(rng: TaskRange, reached: int, client_errors: ReaderErrors) -> RangeReadError | None:
    """The error of an oversized fetch response at ``reached``, None when none was reported."""
    if client_errors.oversized is None:
        return None
    return range_failure(
        rng,
        reached,
        f"the record batch at offset {reached} is larger than the consumer's receive.message.max.bytes "
        f"({client_errors.oversized}); set receive.message.max.bytes (and fetch.max.bytes) in the Kafka "
        "connection's extra above the topic's max.message.bytes",
    )


def range_failure(rng: TaskRange, reached: int, why: str) -> RangeReadError:
    """The error of ``rng`` stopped at offset ``reached`` because of ``why``."""
    return RangeReadError(
        f"cannot read {rng.topic} partition {rng.partition} up to end offset {rng.end}: "
        f"reached offset {reached} (range [{rng.start}, {rng.end})): {why}"
    )


def eof_reason(consumer: Consumer, rng: TaskRange, position: int) -> str:
    """Why a read_committed fetch ended at ``position < end``: the last stable offset (an
    undecided transaction) when the partition's high watermark lies beyond it, else missing data.

    The high watermark is the one of the last fetch response (``cached=True``), which
    librdkafka keeps apart from the last stable offset where read_committed stops.
    """
    _low, high = consumer.get_watermark_offsets(TopicPartition(rng.topic, rng.partition), cached=True)
    if high is not None and high > position:
        return (
            f"partition EOF at offset {position}, the last stable offset: the records from offset "
            f"{position} up to the high watermark {high} include a transaction that is neither committed "
            "nor aborted yet; retry once the producer commits or aborts it (or its transaction times out)"
        )
    return f"partition EOF at offset {position}: records are missing"


def no_progress_reason(consumer: Consumer, rng: TaskRange, timeout_s: float) -> str:
    """Why nothing arrived for ``timeout_s``: the topic or partition is gone (librdkafka
    reports nothing for an assigned partition that does not exist), else the broker."""
    waited = f"no progress for {timeout_s:g} s"
    try:
        topic = consumer.list_topics(rng.topic, timeout=timeout_s).topics.get(rng.topic)
    except KafkaException:
        topic = None
    if topic is not None:
        error = topic.error
        if error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return f"{waited}: topic {rng.topic!r} does not exist (deleted after the reservation?)"
        if error is None and rng.partition not in topic.partitions:
            count = len(topic.partitions)
            return f"{waited}: topic {rng.topic!r} has no partition {rng.partition} ({count} partitions)"
    return f"{waited} (broker unreachable?)"
