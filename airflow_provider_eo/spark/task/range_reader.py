"""Read exactly ``[start, end)`` of one Kafka partition with confluent-kafka.

Contract of :func:`read_range`:

* yields the partition's records with ``start <= offset < end`` in offset order,
  each exactly once; never yields a record at or past ``end``;
* committed data only: the consumer always reads ``isolation.level=read_committed``
  (a connection asking for ``read_uncommitted`` is overridden, with a warning), so
  records of aborted transactions are never yielded;
* offsets may have gaps (compaction, transaction control markers, aborted
  transactions' records): the read still ends at ``end`` -- at the first record with
  offset ``>= end`` or at a partition EOF whose position is ``>= end``; gaps are
  never waited on;
* anything that prevents reaching ``end`` (partition EOF below ``end``, a
  non-retriable broker error, no progress for ``timeout_s``) raises
  :class:`RangeReadError` naming topic, partition, the offset reached and ``end``;
  when no progress is made because the topic or partition no longer exists (deleted
  after the reservation), the error says so; an EOF at the last stable offset below
  ``end`` (a transaction neither committed nor aborted yet holds the committed end
  back) says so too: retrying after the transaction is decided succeeds;
* streaming and bounded in bytes: librdkafka pre-fetches at most ``queue_bytes``
  (``queued.max.messages.kbytes``, unless the connection sets it; ``fetch.max.bytes``
  follows it) and records are handed over at most ``batch_size`` at a time from that
  queue; nothing else is kept;
* a record batch too large for the consumer's ``receive.message.max.bytes`` raises
  :class:`RangeReadError` naming topic, partition and the offset it sits at, as soon as
  librdkafka reports the oversized response (never a wait for the timeout);
* no consumer-group side effects: the partition is assigned (no subscribe),
  under a throwaway group id, with auto commit and offset store disabled.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from airflow_provider_eo.clients.kafka_errors import ClientErrorLog
from airflow_provider_eo.errors import KafkaAccessError
from airflow_provider_eo.spark.records import KafkaRecord, TaskRange

log = logging.getLogger(__name__)

#: Settings forced on every range reader (they define the contract above).
READER_OVERRIDES: dict[str, str] = {
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "enable.partition.eof": "true",
    "auto.offset.reset": "error",  # a start below the low watermark must fail, not jump
    "isolation.level": "read_committed",  # aborted transactions are never written
}


#: Defaults of every range reader that the connection's ``extra`` may override. librdkafka
#: waits ``fetch.queue.backoff.ms`` (1000 by default) before fetching again once its queue
#: is full; with a queue of a few segments and big records that left the task idle most of
#: the time (100 KB records: 3.8 s instead of 1.2 s for 1,000).
#: The broker holds a fetch with nothing new for ``fetch.wait.max.ms`` (500 by default): a packed
#: task's consumer, assigned the next range's partition while the previous fetch waits, lost up
#: to half a second per range (40 ranges of 50 records: 19.8 s instead of 0.55 s). A bounded
#: reader never waits for new records (it stops at its range's last one), so short is cheap.
READER_DEFAULTS: dict[str, str] = {
    "fetch.queue.backoff.ms": "10",
    "fetch.wait.max.ms": "5",
    "socket.nagle.disable": "true",
}


class RangeReadError(KafkaAccessError, RuntimeError):
    """The range could not be read up to its end; the message says where and why."""


class _ReaderErrors(ClientErrorLog):
    """The client error log, also keeping librdkafka's refusal of an oversized fetch response."""

    oversized: str | None = None

    def __call__(self, error: Any) -> None:
        super().__call__(error)
        text = str(error.str())
        if error.code() == KafkaError._BAD_MSG and "receive.message.max.bytes" in text:
            self.oversized = text


def _oversized(rng: TaskRange, reached: int, client_errors: _ReaderErrors) -> RangeReadError | None:
    if client_errors.oversized is None:
        return None
    return _fail(
        rng,
        reached,
        f"the record batch at offset {reached} is larger than the consumer's receive.message.max.bytes "
        f"({client_errors.oversized}); set receive.message.max.bytes (and fetch.max.bytes) in the Kafka "
        "connection's extra above the topic's max.message.bytes",
    )


def _fail(rng: TaskRange, reached: int, why: str) -> RangeReadError:
    return RangeReadError(
        f"cannot read {rng.topic} partition {rng.partition} up to end offset {rng.end}: "
        f"reached offset {reached} (range [{rng.start}, {rng.end})): {why}"
    )


def consumer_config(kafka_config: Mapping[str, str], queue_bytes: int | None = None) -> dict[str, str]:
    """The connection's librdkafka settings over :data:`READER_DEFAULTS`, plus the reader's
    forced settings, and a pre-fetch queue of ``queue_bytes`` (rounded up to KiB) unless the
    connection sets one.

    A connection that sets ``isolation.level`` to anything but ``read_committed`` is
    overridden and a warning says so (the epoch would otherwise write aborted records).
    """
    isolation = kafka_config.get("isolation.level", READER_OVERRIDES["isolation.level"])
    if isolation != READER_OVERRIDES["isolation.level"]:
        log.warning(
            "the Kafka connection sets isolation.level=%s: overridden, epochs read only committed "
            "records (isolation.level=read_committed)",
            isolation,
        )
    config = {**READER_DEFAULTS, **kafka_config, **READER_OVERRIDES}
    if queue_bytes is not None:
        config.setdefault("queued.max.messages.kbytes", str(-(-queue_bytes // 1024)))
    config["group.id"] = f"eo-range-reader-{uuid.uuid4().hex}"  # never committed to
    return config


def read_range(
    kafka_config: Mapping[str, str],
    rng: TaskRange,
    batch_size: int = 1000,
    timeout_s: float = 30.0,
    *,
    queue_bytes: int | None = None,
) -> Iterator[KafkaRecord]:
    """Yield the records of ``rng`` (see the module contract) with a consumer of its own."""
    if rng.start >= rng.end:
        return
    reader = RangeConsumer(kafka_config, queue_bytes)
    try:
        yield from reader.read(rng, batch_size, timeout_s)
    finally:
        reader.close()


class RangeConsumer:
    """One consumer reading ranges one after another (a packed Spark task's ranges), each
    under the module contract: a range's partition is assigned at its start and unassigned
    after it, a message of any other partition is never yielded for it, and a partition
    read before gets a fresh consumer."""

    def __init__(self, kafka_config: Mapping[str, str], queue_bytes: int | None = None) -> None:
        self._config = consumer_config(kafka_config, queue_bytes)
        self._closed = False
        self._read: set[tuple[str, int]] = set()  # partitions this consumer was assigned
        self._consumer, self._errors = self._open()

    def _open(self) -> tuple[Consumer, _ReaderErrors]:
        errors = _ReaderErrors()
        return Consumer({**self._config, "error_cb": errors}), errors

    def read(self, rng: TaskRange, batch_size: int = 1000, timeout_s: float = 30.0) -> Iterator[KafkaRecord]:
        """Yield the records of ``rng``; raises :class:`RangeReadError` as the contract says."""
        if rng.start >= rng.end:
            return
        if (rng.topic, rng.partition) in self._read:
            # a partition read before (sub-ranges of one big range): a fresh consumer, so no
            # record or end-of-partition event fetched for the earlier range can count here
            self._consumer.close()
            self._consumer, self._errors = self._open()
            self._read.clear()
        self._read.add((rng.topic, rng.partition))
        self._consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        try:
            yield from _records(self._consumer, rng, batch_size, timeout_s, self._errors)
        finally:
            if not self._closed:  # a read abandoned by a failed task may end after close()
                self._consumer.unassign()

    def close(self) -> None:
        """Close the consumer (no group side effects: nothing was committed)."""
        self._closed = True
        self._consumer.close()


def _records(
    consumer: Consumer, rng: TaskRange, batch_size: int, timeout_s: float, client_errors: _ReaderErrors
) -> Iterator[KafkaRecord]:
    next_offset = rng.start  # every offset below this one has been handled
    last_progress = time.monotonic()
    while True:
        messages = _next_messages(consumer, batch_size, min(1.0, timeout_s))
        if not messages and time.monotonic() - last_progress > timeout_s:
            why = _no_progress_reason(consumer, rng, timeout_s) + client_errors.explain(consumer)
            raise _fail(rng, next_offset, why)
        for msg in messages:
            if msg.topic() is not None and (msg.topic(), msg.partition()) != (rng.topic, rng.partition):
                continue  # fetched for an earlier range of the same consumer: not this one's
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    eof_offset = msg.offset()
                    position = eof_offset if eof_offset is not None else next_offset
                    if position >= rng.end:
                        return
                    raise _fail(rng, position, _eof_reason(consumer, rng, position))
                if err.fatal() or not err.retriable():
                    why = f"broker error {err.name()}: {err.str()}" + client_errors.explain(consumer)
                    raise _oversized(rng, next_offset, client_errors) or _fail(rng, next_offset, why)
                log.warning("retriable Kafka error topic=%s partition=%s: %s", rng.topic, rng.partition, err)
                continue
            last_progress = time.monotonic()
            offset = msg.offset()
            assert offset is not None
            if offset >= rng.end:
                return
            if offset < next_offset:  # already handled (defensive: a refetch after an error)
                continue
            next_offset = offset + 1
            yield _to_record(msg, rng, offset)
            if next_offset >= rng.end:  # the range's last record: done, no wait for the end of the partition
                return
        oversized = _oversized(rng, next_offset, client_errors)
        if oversized is not None:
            raise oversized


def _eof_reason(consumer: Consumer, rng: TaskRange, position: int) -> str:
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


def _no_progress_reason(consumer: Consumer, rng: TaskRange, timeout_s: float) -> str:
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


def _next_messages(consumer: Consumer, batch_size: int, wait_s: float) -> list[Message]:
    """What is already fetched (up to batch_size), else wait up to ``wait_s`` for one message.

    ``consume(n, timeout)`` would block until ``n`` messages or the timeout, which
    stalls every range end; ``poll`` returns as soon as anything (a record, EOF) arrives.
    """
    messages = consumer.consume(num_messages=batch_size, timeout=0)
    if messages:
        return messages
    msg = consumer.poll(wait_s)
    return [] if msg is None else [msg]


def _to_record(msg: Message, rng: TaskRange, offset: int) -> KafkaRecord:
    headers = tuple((str(name), _as_bytes(raw)) for name, raw in _header_pairs(msg)) if msg.headers() else ()
    _, ts = msg.timestamp()
    key = msg.key()
    value = msg.value()
    return KafkaRecord(
        topic=rng.topic,  # the consumer is assigned this one partition only
        partition=rng.partition,
        offset=offset,
        key=_as_bytes(key),
        value=_as_bytes(value),
        headers=headers,
        timestamp_ms=ts if ts >= 0 else None,
    )


def _header_pairs(msg: Message) -> list[tuple[str, Any]]:
    raw: Any = msg.headers() or []
    return list(raw.items()) if isinstance(raw, dict) else list(raw)


def _as_bytes(value: str | bytes | None) -> bytes | None:
    return value.encode("utf-8") if isinstance(value, str) else value
