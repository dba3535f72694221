"""Planning a backfill: which offset ranges a request replays, and in which chunks.

A request is explicit ranges (``parse_ranges``), a backfill run's data interval
(``ranges_for_interval``: Airflow's Backfill dialog; the interval's bounds are Kafka
timestamps) or the backfill DAG's Trigger form (``ranges_from_params``: topics,
partitions, start and end as offsets or times). :func:`plan_backfill` turns any of them
into the ranges to reserve and checks them against the pipeline's topics and the
partitions' current watermarks; :func:`split_into_chunks` cuts a large plan into epochs
of a bounded size. Nothing here writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epochs import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import OffsetSource, TopicPartition
from airflow_provider_eo.ledger.model.refusals import InvalidRanges, OpenEpochConflict
from airflow_provider_eo.ledger.model.states import OPEN_STATES
from airflow_provider_eo.ledger.planning.replay_plan import SelectedRange


@dataclass(frozen=True)
class BackfillRequest:
    """What a backfill replays: explicit ``ranges`` (a list of ``{topic, partition, start,
    end}`` or its JSON text); else, for a run Airflow's backfill created, its
    ``data_interval`` ``(start, end)`` (timezone-aware) narrowed by the form's ``topics``
    and ``partitions``; else the Trigger form's ``params``. ``requested_at`` (when the run
    was created) ends a form request that gives no end, so every plan of the run (a
    cleared run plans again) covers the same records."""

    ranges: str | Sequence[Any] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    data_interval: tuple[datetime, datetime] | None = None
    requested_at: datetime | None = None


@dataclass(frozen=True)
class BackfillPlan:
    """The ranges to reserve (sorted; empty: nothing to replay) and the watermarks they
    were checked against."""

    ranges: tuple[PartitionRange, ...]
    watermarks: dict[TopicPartition, tuple[int, int]]


def plan_backfill(spec: PipelineSpec, request: BackfillRequest, kafka: OffsetSource) -> BackfillPlan:
    """The ranges ``request`` replays for ``spec``.

    Raises ``ValueError`` naming the param, range or topic at fault: malformed ranges or
    params, or topics that are not the pipeline's. Ranges outside the watermarks are
    the ledger's ``InvalidRanges`` at reservation.
    """
    if request.ranges is not None and request.ranges not in ("", "None", []):
        ranges = parse_ranges(request.ranges)
    elif request.data_interval is not None:
        ranges = ranges_for_interval(spec, request.params, request.data_interval, kafka)
    else:
        ranges = ranges_from_params(spec, request.params, kafka, until=request.requested_at)
    if not ranges:
        return BackfillPlan((), {})
    foreign = sorted({r.topic for r in ranges} - set(spec.topics))
    pattern = spec.topic_pattern
    if foreign and (pattern is None or not all(re.fullmatch(pattern, t) for t in foreign)):
        raise ValueError(
            f"pipeline {spec.name!r}: backfill topic(s) {foreign} are not topics of the pipeline"
        )
    existing = kafka.list_partitions(sorted({r.topic for r in ranges}), None)
    watermarks = kafka.watermarks(sorted(set(existing) & {r.tp for r in ranges}))
    return BackfillPlan(tuple(sorted(ranges)), watermarks)


def parse_ranges(value: str | Sequence[Any]) -> list[PartitionRange]:
    """Ranges from a list of ``{topic, partition, start, end}`` mappings (a ``records``
    key, as in epoch summaries, must equal ``end - start``; an ``offsets`` list, as in a
    replay chunk, makes it a ``replay_plan.SelectedRange``), ``[topic, partition, start,
    end]`` lists, or its JSON text (templates render text). Raises ``ValueError`` naming
    the bad entry."""
    data = json.loads(value) if isinstance(value, str) else value
    if not isinstance(data, list) or not data:
        raise ValueError(f"backfill ranges must be a non-empty list, got {value!r}")
    result: list[PartitionRange] = []
    for index, item in enumerate(data):
        try:
            offsets = None
            if isinstance(item, dict):
                unknown = set(item) - {"topic", "partition", "start", "end", "records", "offsets"}
                if unknown:
                    raise ValueError(f"unknown keys {sorted(unknown)}")
                topic, partition, start, end = item["topic"], item["partition"], item["start"], item["end"]
                if "records" in item and item["records"] != int(end) - int(start):
                    raise ValueError("records must equal end - start")
                offsets = item.get("offsets")
            else:
                topic, partition, start, end = item
            if not isinstance(topic, str) or not topic:
                raise ValueError("topic must be a non-empty string")
            if offsets is None:
                result.append(PartitionRange(topic, int(partition), int(start), int(end)))
            else:
                chosen = tuple(int(o) for o in offsets)
                result.append(SelectedRange(topic, int(partition), int(start), int(end), chosen))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"backfill ranges[{index}] = {item!r}: {exc}") from exc
    return result


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


def _epoch_ms(field: str, value: str) -> int:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"backfill param {field!r}: not an ISO-8601 date-time: {value!r}") from None
    return epoch_ms(moment)


def _param_int(field: str, value: Any) -> int:
    """``value`` as a non-negative integer, or a ValueError naming the backfill param."""
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).strip().isdigit():
        raise ValueError(f"backfill param {field!r}: not a non-negative integer: {value!r}")
    return int(value)


def _chosen_partitions(
    spec: PipelineSpec, params: Mapping[str, Any], kafka: OffsetSource
) -> list[TopicPartition]:
    """The partitions the form's ``topics`` and ``partitions`` choose (empty: all of the
    pipeline's); ValueError naming a topic without a chosen partition."""
    topics = list(params.get("topics") or [])
    listed = (
        kafka.list_partitions(topics, None)
        if topics
        else kafka.list_partitions(spec.topics, spec.topic_pattern)
    )
    wanted = {_param_int("partitions", p) for p in params.get("partitions") or []}
    for topic in topics or sorted({t for t, _ in listed}):
        missing = sorted(wanted - {p for t, p in listed if t == topic})
        if missing:
            raise ValueError(f"backfill param 'partitions': {topic} has no partition(s) {missing}")
    return [tp for tp in listed if not wanted or tp[1] in wanted]


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


def ranges_from_params(
    spec: PipelineSpec, params: Mapping[str, Any], kafka: OffsetSource, *, until: datetime | None = None
) -> list[PartitionRange]:
    """Ranges from the backfill Trigger form (``topics``, ``partitions``, exactly one of
    ``start_offset``/``start_time``, at most one of ``end_offset``/``end_time``; no end:
    the first record stamped at or after ``until`` (the run's creation), or with no
    ``until`` each partition's high watermark). Partitions with nothing to replay are
    left out. Raises ``ValueError`` naming the param (and topic/partition) at fault."""
    tps = _chosen_partitions(spec, params, kafka)
    start_offset, start_time = params.get("start_offset"), params.get("start_time")
    end_offset, end_time = params.get("end_offset"), params.get("end_time")
    if (start_offset is None) == (start_time in (None, "")):
        raise ValueError("backfill params: give exactly one of 'start_offset' and 'start_time'")
    if end_offset is not None and end_time not in (None, ""):
        raise ValueError("backfill params: give at most one of 'end_offset' and 'end_time'")
    starts = (
        dict.fromkeys(tps, _param_int("start_offset", start_offset))
        if start_offset is not None
        else kafka.offsets_for_timestamp(tps, _epoch_ms("start_time", str(start_time)))
    )
    if end_offset is not None:
        ends = dict.fromkeys(tps, _param_int("end_offset", end_offset))
    elif end_time not in (None, ""):
        ends = kafka.offsets_for_timestamp(tps, _epoch_ms("end_time", str(end_time)))
    elif until is not None:
        ends = kafka.offsets_for_timestamp(tps, epoch_ms(until))
    else:
        ends = {tp: hw for tp, (_, hw) in kafka.watermarks(tps).items()}
    what = "end_offset" if end_offset is not None else "end_time" if end_time else "high watermark"
    return _ranges(tps, starts, ends, what)


def ranges_for_interval(
    spec: PipelineSpec, params: Mapping[str, Any], interval: tuple[datetime, datetime], kafka: OffsetSource
) -> list[PartitionRange]:
    """The records whose Kafka timestamps fall in ``interval`` ``[start, end)``, per chosen
    partition (form ``topics``/``partitions``; empty: all): from the first offset stamped
    at or after ``start`` to the first stamped at or after ``end`` (none: the high
    watermark now). Exact when a partition's timestamps never decrease (LogAppendTime,
    or producers stamping in order); otherwise the offsets between the two lookups, as
    Kafka's ``offsetsForTimes`` defines them. The form's start/end params must be empty
    (the interval is the range): ``ValueError`` naming them otherwise."""
    given = [
        name
        for name in ("start_offset", "end_offset", "start_time", "end_time")
        if params.get(name) not in (None, "")
    ]
    if given:
        raise ValueError(
            f"backfill params {given}: a run over a data interval replays that interval; leave them empty"
        )
    start, end = interval
    if end < start:
        raise ValueError(
            f"backfill data interval ends ({end.isoformat()}) before it starts ({start.isoformat()})"
        )
    tps = _chosen_partitions(spec, params, kafka)
    starts = kafka.offsets_for_timestamp(tps, epoch_ms(start))
    ends = kafka.offsets_for_timestamp(tps, epoch_ms(end))
    return _ranges(tps, starts, ends, f"first offset at or after {end.isoformat()}")


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
