"""Planning a backfill: which offset ranges a request replays, and in which chunks.

Pure: the protocol (``ledger/protocol/backfill_reservation.py``) reads Kafka (the
partitions listed, the offsets of timestamps, the watermarks) and hands the answers in.
A window or interval request (``backfill_request.py``) becomes ranges by
:func:`chosen_partitions`, :func:`timestamps_of` and :func:`window_ranges`;
:func:`check_pipeline_topics` refuses topics that are not the pipeline's;
:func:`split_into_chunks` cuts a large plan into epochs of a bounded size;
:func:`validate_backfill_ranges` and :func:`run_epoch_or_none` decide a run's request
for one epoch. Nothing here reads or writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.refusals import InvalidRanges, OpenEpochConflict
from airflow_provider_eo.ledger.model.states import OPEN_STATES
from airflow_provider_eo.ledger.planning.backfill_request import DataInterval, OffsetWindow, PartitionChoice

Watermarks = Mapping[TopicPartition, tuple[int, int]]


@dataclass(frozen=True)
class BackfillPlan:
    """The ranges to reserve (sorted; empty: nothing to replay) and the watermarks they
    were checked against."""

    ranges: tuple[PartitionRange, ...]
    watermarks: dict[TopicPartition, tuple[int, int]]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def epoch_ms(moment: datetime) -> int:
    """The Kafka timestamp (epoch ms) a record needs at least to be at or after ``moment``
    (naive = UTC): exact integer arithmetic, a fraction of a millisecond rounds up."""
    utc = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    plain = datetime(  # a stdlib datetime: pendulum's subtraction gives no plain timedelta
        utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second, utc.microsecond, tzinfo=UTC
    )
    return -((_EPOCH - plain) // _MS)


def chosen_partitions(choice: PartitionChoice, listed: Sequence[TopicPartition]) -> list[TopicPartition]:
    """The ``listed`` partitions (those of ``choice.topics``, or of the pipeline's topics
    when it names none) that ``choice.partitions`` keeps (empty: all), in listed order.
    ``ValueError`` naming a topic that lacks a chosen partition."""
    wanted = set(choice.partitions)
    for topic in choice.topics or sorted({t for t, _ in listed}):
        missing = sorted(wanted - {p for t, p in listed if t == topic})
        if missing:
            raise ValueError(f"backfill param 'partitions': {topic} has no partition(s) {missing}")
    return [tp for tp in listed if not wanted or tp[1] in wanted]


def timestamps_of(request: OffsetWindow | DataInterval) -> tuple[int, ...]:
    """The Kafka timestamps (epoch ms) whose offsets :func:`window_ranges` needs, in the
    order a reader should look them up (none: offsets and watermarks only)."""
    if isinstance(request, DataInterval):
        return (epoch_ms(request.start), epoch_ms(request.end))
    stamps = [] if request.start_time is None else [epoch_ms(request.start_time)]
    if request.end_time is not None:
        stamps.append(epoch_ms(request.end_time))
    elif request.end_offset is None and request.until is not None:
        stamps.append(epoch_ms(request.until))
    return tuple(stamps)


def window_ranges(
    request: OffsetWindow | DataInterval,
    tps: Sequence[TopicPartition],
    offsets_at: Mapping[int, Mapping[TopicPartition, int]],
    watermarks: Watermarks,
) -> list[PartitionRange]:
    """The ranges ``request`` means on the partitions ``tps``, given ``offsets_at[ts]``
    (per partition the first offset stamped at or after ``ts``, the high watermark where
    none is: Kafka's ``offsetsForTimes`` for each of :func:`timestamps_of`) and the
    partitions' ``watermarks`` (used when a window has no end and no ``until``).

    An interval is exact when a partition's timestamps never decrease (LogAppendTime, or
    producers stamping in order); otherwise it is the offsets between the two lookups.
    Partitions with nothing to replay are left out; ``ValueError`` when a start is after
    its end."""
    if isinstance(request, DataInterval):
        starts = offsets_at[epoch_ms(request.start)]
        ends = offsets_at[epoch_ms(request.end)]
        return _ranges(tps, starts, ends, f"first offset at or after {request.end.isoformat()}")
    if request.start_offset is not None:
        starts = dict.fromkeys(tps, request.start_offset)
    else:
        assert request.start_time is not None  # OffsetWindow guarantees one start
        starts = offsets_at[epoch_ms(request.start_time)]
    if request.end_offset is not None:
        ends, what = dict.fromkeys(tps, request.end_offset), "end_offset"
    elif request.end_time is not None:
        ends, what = offsets_at[epoch_ms(request.end_time)], "end_time"
    elif request.until is not None:
        ends, what = offsets_at[epoch_ms(request.until)], "high watermark"
    else:
        ends, what = {tp: watermarks[tp][1] for tp in tps}, "high watermark"
    return _ranges(tps, starts, ends, what)


def _ranges(
    tps: Sequence[TopicPartition],
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    end_what: str,
) -> list[PartitionRange]:
    """``[start, end)`` per partition, empty ones left out; ValueError when a start is after its end."""
    ranges: list[PartitionRange] = []
    for tp in tps:
        start, end = starts[tp], ends[tp]
        if start > end:
            raise ValueError(
                f"backfill of {tp[0]}[{tp[1]}]: start {start} is after the end {end} ({end_what})"
            )
        if start < end:
            ranges.append(PartitionRange(tp[0], tp[1], start, end))
    return ranges


def check_pipeline_topics(
    pipeline: str, topics: Sequence[str], topic_pattern: str | None, ranges: Iterable[PartitionRange]
) -> None:
    """``ValueError`` when a range's topic is neither one of the pipeline's ``topics`` nor
    fully matched by its ``topic_pattern``."""
    foreign = sorted({r.topic for r in ranges} - set(topics))
    if foreign and (topic_pattern is None or not all(re.fullmatch(topic_pattern, t) for t in foreign)):
        raise ValueError(f"pipeline {pipeline!r}: backfill topic(s) {foreign} are not topics of the pipeline")


def split_into_chunks(
    ranges: Sequence[PartitionRange], max_records: int | None
) -> tuple[tuple[PartitionRange, ...], ...]:
    """``ranges`` cut into chunks (one epoch each) of at most ``max_records`` offsets.

    Deterministic: ranges in sorted order fill chunk after chunk, so ``N`` offsets give
    ``ceil(N / max_records)`` chunks, every chunk but the last full, each with at most
    one (contiguous) range per partition. ``max_records`` None: one chunk; no ranges: none.
    """
    ordered = sorted(r for r in ranges if r.start < r.end)
    if not ordered:
        return ()
    if max_records is None:
        return (tuple(ordered),)
    if max_records < 1:
        raise ValueError(f"max_records must be >= 1, got {max_records}")
    chunks: list[tuple[PartitionRange, ...]] = []
    current: list[PartitionRange] = []
    room = max_records
    for r in ordered:
        start = r.start
        while start < r.end:
            take = min(room, r.end - start)
            current.append(PartitionRange(r.topic, r.partition, start, start + take))
            start, room = start + take, room - take
            if room == 0:
                chunks.append(tuple(current))
                current, room = [], max_records
    if current:
        chunks.append(tuple(current))
    return tuple(chunks)


def validate_backfill_ranges(
    ranges: Iterable[PartitionRange], watermarks: Mapping[TopicPartition, tuple[int, int]] | None = None
) -> tuple[PartitionRange, ...]:
    """Sorted ranges; each must have 0 <= start < end, one per partition, and lie within
    ``[low, high]`` when ``watermarks`` are given. Raises ``InvalidRanges``."""
    checked = tuple(sorted(ranges))
    if not checked:
        raise InvalidRanges("a backfill needs at least one range")
    seen: set[TopicPartition] = set()
    for r in checked:
        if r.start < 0 or r.start >= r.end:
            raise InvalidRanges(
                f"range {r.topic}[{r.partition}] [{r.start}, {r.end}) must have 0 <= start < end"
            )
        if r.tp in seen:
            raise InvalidRanges(f"partition {r.topic}[{r.partition}] appears in more than one range")
        seen.add(r.tp)
        if watermarks is not None:
            if r.tp not in watermarks:
                raise InvalidRanges(f"partition {r.topic}[{r.partition}] does not exist")
            low, high = watermarks[r.tp]
            if r.start < low or r.end > high:
                raise InvalidRanges(
                    f"range {r.topic}[{r.partition}] [{r.start}, {r.end}) is outside the available "
                    f"offsets [{low}, {high})"
                )
    return checked


def run_epoch_or_none(
    pipeline: str,
    mine: Sequence[Epoch],
    ranges: tuple[PartitionRange, ...],
    watermarks: Mapping[TopicPartition, tuple[int, int]] | None,
) -> Epoch | None:
    """What a run's request for a backfill epoch over ``ranges`` gets, given ``mine``, the
    run's own open and COMMITTED backfill epochs of ``pipeline``:

    * its epoch over exactly ``ranges`` as it is (a retry of the chunk, or a cleared run
      resuming);
    * ``OpenEpochConflict`` when one of its open epochs overlaps ``ranges`` (same partition,
      shared offsets): one run never writes the same offsets twice at once;
    * None (insert a new epoch: the run's next chunk), after checking ``ranges`` against
      ``watermarks`` when given (``InvalidRanges``).
    """
    for epoch in mine:
        if epoch.ranges == ranges:
            return epoch
    for epoch in mine:
        if epoch.state in OPEN_STATES and _overlap(epoch.ranges, ranges):
            raise OpenEpochConflict(pipeline, epoch.epoch_id, epoch.state.value, epoch.dag_id, epoch.run_id)
    if watermarks is not None:
        validate_backfill_ranges(ranges, watermarks)
    return None


def _overlap(held: Iterable[PartitionRange], wanted: Iterable[PartitionRange]) -> bool:
    """Whether any two ranges of one partition share an offset."""
    wanted_by_tp = {r.tp: r for r in wanted}
    return any(
        (other := wanted_by_tp.get(r.tp)) is not None and r.start < other.end and other.start < r.end
        for r in held
    )
