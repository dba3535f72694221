"""The dead-letter topic check of an audit: every dead letter of the window's ranges is in
the pipeline's dead-letter topic exactly once, with the headers it was published with.

Contract of :func:`check_dead_letter_topic` (a pipeline without ``dead_letters.topic``
returns no finding and reads nothing):

1. The marker is read first (``clients.dead_letter_topic.DeadLetterTopic.marker``: the
   marker group's committed offset, nothing joined or committed): letters numbered below
   it are published, so expected exactly once; later ones at most once.
2. The ledger's dead letters of the window's ranges (merged per partition, each offset
   asked once) are hashed into :class:`~.dead_letter_topic_letters.TopicLetters`.
3. The topic is read bounded, like the write task reads: assigned partitions, a throwaway
   group, ``read_committed``, no commits. Per partition from the first record not older
   than the window's first commit minus :data:`CLOCK_SKEW_MS` (letters are published after
   their epoch commits) to the end the partition had when the read began; only when a
   published letter is still missing is the partition read again from its start up to
   there (a window of a backfill whose letters were published by an older epoch).
4. The findings (``dead_letter_topic_*``): missing, duplicate, record differs, unexpected
   (an offset ``known_missing`` names, a row already reported ``dead_letter_missing``, is
   not reported again). Kafka unable to answer is one ``dead_letter_topic_unreadable``.

It never writes anything: no producer, no group commit, no cursor.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from airflow_provider_eo.audit.dead_letter_topic_letters import SourceOffset, TopicLetters, eo_headers
from airflow_provider_eo.audit.findings import Finding, FindingKind
from airflow_provider_eo.clients.connection_settings import KafkaClientConfig
from airflow_provider_eo.clients.dead_letter_topic import DeadLetterTopic
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.ledger.model.offsets import OffsetSource, TopicPartition
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.ledger.protocol import dead_letter_headers as publication

log = logging.getLogger(__name__)

#: How much older than the window's first commit a letter's timestamp may be (clocks differ).
CLOCK_SKEW_MS = 10 * 60 * 1000
#: Records asked of the consumer per poll.
POLL_RECORDS = 500


class DeadLetterTopicUnreadable(RuntimeError):
    """Kafka cannot serve the dead-letter topic (gone, unreachable, no progress in time)."""


def check_dead_letter_topic(
    spec: PipelineSpec,
    epochs: Sequence[Epoch],
    ranges: Iterable[PartitionRange],
    ledger: LedgerReads,
    offsets: OffsetSource,
    settings: KafkaClientConfig,
    known_missing: Iterable[SourceOffset] = (),
) -> tuple[list[Finding], dict[str, int]]:
    """The window's dead-letter topic findings and counts (``letters``, ``published``,
    ``seen``; see the module contract); ``ranges`` are the window's audited ranges."""
    if spec.dead_letters is None:
        return [], {}
    topic = spec.dead_letters.topic
    try:
        marker = DeadLetterTopic.of_pipeline(spec, settings).marker()
        letters = TopicLetters(spec.name, topic, marker, _epoch_covers(spec.name, epochs, ledger))
        merged = _merged(ranges)
        for rng in merged:
            letters.expect(
                ledger.dead_letters_in_range(spec.name, rng.topic, rng.partition, rng.start, rng.end)
            )
        if letters.letters:
            _read_topic(topic, spec.name, merged, letters, offsets, settings, _first_commit_ms(epochs))
    except Exception as exc:  # a topic gone, Kafka unreachable: reported, not a crash
        detail = f"cannot read dead-letter topic {topic!r} of pipeline {spec.name!r}: {exc}"
        return [Finding(FindingKind.DEAD_LETTER_TOPIC_UNREADABLE, detail, None, topic)], {}
    log.info(
        "audit: dead-letter topic pipeline=%s topic=%s marker=%d %s", spec.name, topic, marker, letters.counts
    )
    return letters.findings(known_missing), letters.counts


def _merged(ranges: Iterable[PartitionRange]) -> list[PartitionRange]:
    """The ranges merged per partition (overlapping epochs: a backfill, a replay)."""
    out: list[PartitionRange] = []
    for rng in sorted((r for r in ranges if r.end > r.start), key=lambda r: (r.tp, r.start)):
        last = out[-1] if out else None
        if last is not None and last.tp == rng.tp and rng.start <= last.end:
            out[-1] = PartitionRange(last.topic, last.partition, last.start, max(last.end, rng.end))
        else:
            out.append(rng)
    return out


def _first_commit_ms(epochs: Sequence[Epoch]) -> int:
    stamps = [e.committed_at.timestamp() for e in epochs if e.committed_at is not None]
    return max(0, int(min(stamps, default=0) * 1000) - CLOCK_SKEW_MS)


def _epoch_covers(
    pipeline: str, epochs: Sequence[Epoch], ledger: LedgerReads
) -> Callable[[int, SourceOffset], bool]:
    """Whether epoch ``id`` is a committed epoch of ``pipeline`` whose ranges hold the offset
    (the window's epochs known, others asked of the ledger once each)."""
    known: dict[int, Epoch | None] = {e.epoch_id: e for e in epochs}

    def covers(epoch_id: int, source: SourceOffset) -> bool:
        if epoch_id not in known:
            try:
                known[epoch_id] = ledger.get_epoch(epoch_id)
            except Exception:  # EpochNotFound: pruned or never there
                known[epoch_id] = None
        epoch = known[epoch_id]
        return (
            epoch is not None
            and epoch.pipeline == pipeline
            and epoch.state == EpochState.COMMITTED
            and any(r.tp == source[:2] and r.start <= source[2] < r.end for r in epoch.ranges)
        )

    return covers


def _read_topic(
    topic: str,
    pipeline: str,
    ranges: Sequence[PartitionRange],
    letters: TopicLetters,
    offsets: OffsetSource,
    settings: KafkaClientConfig,
    since_ms: int,
) -> None:
    """Read the part of ``topic`` that can hold the window's letters (module contract, 3)."""
    tps = offsets.list_partitions([topic], None)
    if not tps:
        raise DeadLetterTopicUnreadable(f"topic {topic!r} has no partition")
    marks = offsets.watermarks(tps)
    starts = offsets.offsets_for_timestamp(tps, since_ms)
    wanted: dict[TopicPartition, list[PartitionRange]] = {}
    for rng in ranges:
        wanted.setdefault(rng.tp, []).append(rng)
    _read(settings, pipeline, {tp: (starts[tp], marks[tp][1]) for tp in tps}, wanted, letters)
    if any(letter.published and not letter.copies for letter in letters.letters.values()):
        earlier = {tp: (marks[tp][0], starts[tp]) for tp in tps if marks[tp][0] < starts[tp]}
        log.info(
            "audit: dead-letter topic %s: letters missing after %d, reading %s", topic, since_ms, earlier
        )
        _read(settings, pipeline, earlier, wanted, letters)


def _read(
    settings: KafkaClientConfig,
    pipeline: str,
    bounds: Mapping[TopicPartition, tuple[int, int]],
    wanted: Mapping[TopicPartition, Sequence[PartitionRange]],
    letters: TopicLetters,
) -> None:
    """Feed ``letters`` the records of ``[start, end)`` per partition that name ``pipeline``
    and an offset of ``wanted``."""
    todo = {tp: bound for tp, bound in bounds.items() if bound[1] > bound[0]}
    if not todo:
        return
    consumer = Consumer(
        {
            **settings.config,
            "group.id": f"eo-audit-dead-letters-{uuid.uuid4().hex[:12]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([KafkaTopicPartition(t, p, start) for (t, p), (start, _) in todo.items()])
        idle_since = time.monotonic()
        while todo:
            batch = consumer.consume(POLL_RECORDS, timeout=1.0)
            if not batch and time.monotonic() - idle_since > settings.timeout_s:
                raise DeadLetterTopicUnreadable(
                    f"no progress within {settings.timeout_s:g} s at {sorted(todo)}"
                )
            for msg in batch:
                idle_since = time.monotonic()
                _take(msg, todo, pipeline, wanted, letters)
    finally:
        consumer.close()


def _take(
    msg: Any,
    todo: dict[TopicPartition, tuple[int, int]],
    pipeline: str,
    wanted: Mapping[TopicPartition, Sequence[PartitionRange]],
    letters: TopicLetters,
) -> None:
    """One consumed message: a partition's end (EOF or its bound) drops it from ``todo``."""
    tp: TopicPartition = (str(msg.topic()), int(msg.partition()))
    error = msg.error()
    if error is not None:
        if error.code() != KafkaError._PARTITION_EOF:
            raise KafkaException(error)
        todo.pop(tp, None)
        return
    if tp not in todo:
        return
    offset = int(msg.offset())
    if offset < todo[tp][1]:
        _see(msg, pipeline, wanted, letters)
    if offset + 1 >= todo[tp][1]:
        todo.pop(tp)


def _see(
    msg: Any, pipeline: str, wanted: Mapping[TopicPartition, Sequence[PartitionRange]], letters: TopicLetters
) -> None:
    headers = list(msg.headers() or [])
    eo = eo_headers(headers)
    if eo.get(publication.PIPELINE) != pipeline.encode():
        return
    try:
        source = (
            (eo.get(publication.SOURCE_TOPIC) or b"").decode(),
            int(eo.get(publication.SOURCE_PARTITION) or b"-1"),
            int(eo.get(publication.SOURCE_OFFSET) or b"-1"),
        )
    except ValueError:
        return  # not a letter of this provider's making: no source offset to check it against
    if any(r.start <= source[2] < r.end for r in wanted.get(source[:2], ())):
        letters.see(
            source, msg.key(), msg.value(), headers, f"partition {msg.partition()} offset {msg.offset()}"
        )
