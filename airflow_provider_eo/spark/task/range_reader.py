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

:class:`RangeConsumer` reads a packed task's ranges with one consumer, each under the same
contract; the ranges it is told of ahead are fetched a window at a time
(:mod:`~airflow_provider_eo.spark.task.range_window`), so a pack of small ranges costs a
round trip per window instead of one per range. The errors' wording:
:mod:`~airflow_provider_eo.spark.task.range_errors`.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from airflow_provider_eo.spark.records import KafkaRecord, TaskRange
from airflow_provider_eo.spark.task.range_errors import (
    RangeReadError,
    ReaderErrors,
    eof_reason,
    no_progress_reason,
    oversized_failure,
    range_failure,
)
from airflow_provider_eo.spark.task.range_window import RangeSlot, window_size

__all__ = [
    "READER_DEFAULTS",
    "READER_OVERRIDES",
    "RangeConsumer",
    "RangeReadError",
    "consumer_config",
    "read_range",
]

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
    under the module contract.

    ``ranges``: the ranges :meth:`read` will be asked for, in that order (empty ones
    ignored). They are fetched a window at a time: the partitions of the next ``width``
    ranges are assigned together, each at its range's start, and what arrives for a range
    not yet being read waits in its slot, bounded in bytes
    (:mod:`~airflow_provider_eo.spark.task.range_window`), the window refilled once down
    to half its width; a range's partition is unassigned once it is read, or, when nothing
    lies past its end, with the next ``width`` such partitions in one call (what still
    arrives for it meanwhile belongs to no slot: dropped). A window never holds one
    partition twice, and a partition assigned before (sub-ranges of one big range) waits
    until the window is empty, then gets a fresh consumer, so no record or end-of-partition
    event fetched for an earlier range can count for it. A range read out of that order (or
    without ``ranges``) is read alone: the window and the rest of the plan are dropped. An
    oversized fetch response while several partitions are assigned narrows the window to one
    range for the rest (a fresh consumer, each slot's partition assigned again at its next
    offset), so its error names the right range.
    """

    def __init__(
        self,
        kafka_config: Mapping[str, str],
        queue_bytes: int | None = None,
        ranges: Iterable[TaskRange] = (),
    ) -> None:
        self._config = consumer_config(kafka_config, queue_bytes)
        self._width, self._bound = window_size(queue_bytes)
        self._plan = deque(rng for rng in ranges if rng.start < rng.end)
        self._window: list[RangeSlot] = []  # the range being read first
        self._closed = False
        self._read: set[tuple[str, int]] = set()  # partitions this consumer was assigned
        self._spent: list[TopicPartition] = []  # read ranges' partitions, paused, still assigned
        self._consumer, self._errors = self._open()

    def _open(self) -> tuple[Consumer, ReaderErrors]:
        errors = ReaderErrors()
        return Consumer({**self._config, "error_cb": errors}), errors

    def _renew(self) -> None:
        """A fresh consumer: nothing assigned, nothing fetched before can arrive."""
        self._consumer.close()
        self._consumer, self._errors = self._open()
        self._read.clear()
        self._spent.clear()
        for slot in self._window:
            slot.assigned = slot.paused = False

    def read(self, rng: TaskRange, batch_size: int = 1000, timeout_s: float = 30.0) -> Iterator[KafkaRecord]:
        """Yield the records of ``rng``; raises :class:`RangeReadError` as the contract says."""
        if rng.start >= rng.end:
            return
        planned = self._window[0].rng == rng if self._window else bool(self._plan) and self._plan[0] == rng
        if not planned:
            self._plan.clear()
            if self._window:
                self._window.clear()
                self._renew()
            self._plan.append(rng)
        self._fill()
        head = self._window[0]
        try:
            yield from self._drain(head, batch_size, timeout_s)
        finally:
            self._window.remove(head)
            if head.assigned and not self._closed:  # a read abandoned by a failed task may end after close()
                self._retire(rng)

    def _retire(self, rng: TaskRange) -> None:
        """Stop fetching a read range's partition. An unassign (or a pause) waits for librdkafka's
        main thread, about 2 ms a call, so a partition with nothing past the range's end (the
        last fetch's high watermark at or below it: a small range read to the partition's end)
        is unassigned later, with up to ``width`` others in one call; any other at once."""
        partition = TopicPartition(rng.topic, rng.partition)
        _low, high = self._consumer.get_watermark_offsets(partition, cached=True)
        if high is None or not 0 <= high <= rng.end:
            self._consumer.incremental_unassign([partition])
            return
        self._spent.append(partition)
        if len(self._spent) >= self._width:
            self._consumer.incremental_unassign(self._spent)
            self._spent = []

    def _fill(self) -> None:
        """Extend the window from the plan once it is down to half its width (an assign waits
        for librdkafka's main thread: one call per half window, not per range), assign its new
        partitions, resume the head's."""
        refill = len(self._window) <= self._width // 2
        while refill and self._plan and len(self._window) < self._width:
            key = (self._plan[0].topic, self._plan[0].partition)
            if key in self._read or any(slot.key == key for slot in self._window):
                if self._window:
                    break  # read again only once the window is empty, on a fresh consumer
                self._renew()
            self._window.append(RangeSlot(self._plan.popleft(), self._bound))
        new = [slot for slot in self._window[: self._width] if not slot.assigned and not slot.finished]
        if new:
            self._consumer.incremental_assign([TopicPartition(*slot.key, slot.next_offset) for slot in new])
            for slot in new:
                slot.assigned = True
                self._read.add(slot.key)
        head = self._window[0]
        if head.paused and not head.finished:
            self._consumer.resume([TopicPartition(*head.key)])
            head.paused = False

    def _drain(self, head: RangeSlot, batch_size: int, timeout_s: float) -> Iterator[KafkaRecord]:
        last_progress = time.monotonic()
        while True:
            while head.records:
                yield head.take()
            if head.failure is not None:
                raise head.failure
            if head.done:
                return
            messages = _next_messages(self._consumer, batch_size, min(1.0, timeout_s))
            if not messages and time.monotonic() - last_progress > timeout_s:
                why = no_progress_reason(self._consumer, head.rng, timeout_s) + self._errors.explain(
                    self._consumer
                )
                raise range_failure(head.rng, head.next_offset, why)
            if self._route(messages, head):
                last_progress = time.monotonic()
            if self._errors.oversized is not None and not head.finished:
                if sum(slot.assigned for slot in self._window) > 1:
                    log.warning("oversized fetch response with %d ranges assigned: reading one at a time",
                                len(self._window))  # fmt: skip
                    self._width = 1
                    self._renew()
                    self._fill()
                else:
                    head.failure = oversized_failure(head.rng, head.next_offset, self._errors)
            self._pause_stopped(head)

    def _route(self, messages: list[Message], head: RangeSlot) -> bool:
        """Hand every message to its range's slot (a message of no range in the window: one
        fetched for a range already read, past its end); True when a record arrived."""
        slots = {slot.key: slot for slot in self._window if slot.assigned}
        progress = False
        for msg in messages:
            topic, partition = msg.topic(), msg.partition()
            slot = head if topic is None or partition is None else slots.get((topic, partition))
            if slot is None or slot.finished:
                continue
            err = msg.error()
            if err is not None:
                self._note_error(slot, msg, err)
                continue
            offset = msg.offset()
            assert offset is not None
            if offset >= slot.rng.end:
                slot.done = True
            elif offset >= slot.next_offset:  # below: already handled (a refetch after an error)
                slot.add(_to_record(msg, slot.rng, offset))
                progress = True
        return progress

    def _note_error(self, slot: RangeSlot, msg: Message, err: KafkaError) -> None:
        """An end of partition completes or fails ``slot``'s range; a broker error fails it
        unless retriable (then logged)."""
        rng = slot.rng
        if err.code() == KafkaError._PARTITION_EOF:
            eof_offset = msg.offset()
            position = eof_offset if eof_offset is not None else slot.next_offset
            if position >= rng.end:
                slot.done = True
            else:
                slot.failure = range_failure(rng, position, eof_reason(self._consumer, rng, position))
        elif err.fatal() or not err.retriable():
            why = f"broker error {err.name()}: {err.str()}" + self._errors.explain(self._consumer)
            reached = slot.next_offset
            slot.failure = oversized_failure(rng, reached, self._errors) or range_failure(rng, reached, why)
        else:
            log.warning("retriable Kafka error topic=%s partition=%s: %s", rng.topic, rng.partition, err)

    def _pause_stopped(self, head: RangeSlot) -> None:
        """Pause the partition of every range but the head's that is finished or at its bound."""
        stopped = [
            s for s in self._window if s is not head and s.assigned and not s.paused and s.stops_fetching
        ]
        if stopped:
            self._consumer.pause([TopicPartition(*slot.key) for slot in stopped])
            for slot in stopped:
                slot.paused = True

    def close(self) -> None:
        """Close the consumer (no group side effects: nothing was committed)."""
        self._closed = True
        self._consumer.close()


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
