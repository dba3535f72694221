"""Planning a backfill: which offset ranges a request replays.

A request is explicit ranges (``parse_ranges``) or the backfill DAG's Trigger form
(``ranges_from_params``: topics, partitions, start and end as offsets or times).
:func:`plan_backfill` turns either into the ranges to reserve and checks them against
the pipeline's topics and the partitions' current watermarks. Nothing here writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.models import PartitionRange
from airflow_provider_eo.ledger.offsets import OffsetSource, TopicPartition


@dataclass(frozen=True)
class BackfillRequest:
    """What a backfill replays: explicit ``ranges`` (a list of ``{topic, partition, start,
    end}`` or its JSON text) or, when they are absent, the Trigger form's ``params``."""

    ranges: str | Sequence[Any] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


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
    else:
        ranges = ranges_from_params(spec, request.params, kafka)
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
    """Ranges from a list of ``{topic, partition, start, end}`` mappings (or
    ``[topic, partition, start, end]`` lists), or its JSON text (templates render text).
    Raises ``ValueError`` naming the bad entry."""
    data = json.loads(value) if isinstance(value, str) else value
    if not isinstance(data, list) or not data:
        raise ValueError(f"backfill ranges must be a non-empty list, got {value!r}")
    result: list[PartitionRange] = []
    for index, item in enumerate(data):
        try:
            if isinstance(item, dict):
                unknown = set(item) - {"topic", "partition", "start", "end"}
                if unknown:
                    raise ValueError(f"unknown keys {sorted(unknown)}")
                topic, partition, start, end = item["topic"], item["partition"], item["start"], item["end"]
            else:
                topic, partition, start, end = item
            if not isinstance(topic, str) or not topic:
                raise ValueError("topic must be a non-empty string")
            result.append(PartitionRange(topic, int(partition), int(start), int(end)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"backfill ranges[{index}] = {item!r}: {exc}") from exc
    return result


def _epoch_ms(field: str, value: str) -> int:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"backfill param {field!r}: not an ISO-8601 date-time: {value!r}") from None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp() * 1000)


def _param_int(field: str, value: Any) -> int:
    """``value`` as a non-negative integer, or a ValueError naming the backfill param."""
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).strip().isdigit():
        raise ValueError(f"backfill param {field!r}: not a non-negative integer: {value!r}")
    return int(value)


def ranges_from_params(
    spec: PipelineSpec, params: Mapping[str, Any], kafka: OffsetSource
) -> list[PartitionRange]:
    """Ranges from the backfill Trigger form (``topics``, ``partitions``, exactly one of
    ``start_offset``/``start_time``, at most one of ``end_offset``/``end_time``; no end:
    each partition's high watermark). Partitions with nothing to replay are left out.
    Raises ``ValueError`` naming the param (and topic/partition) at fault."""
    topics = list(params.get("topics") or [])
    listed = (
        kafka.list_partitions(topics, None)
        if topics
        else kafka.list_partitions(spec.topics, spec.topic_pattern)
    )
    wanted = {_param_int("partitions", p) for p in params.get("partitions") or []}
    tps = [tp for tp in listed if not wanted or tp[1] in wanted]
    for topic in topics or sorted({t for t, _ in listed}):
        missing = sorted(wanted - {p for t, p in listed if t == topic})
        if missing:
            raise ValueError(f"backfill param 'partitions': {topic} has no partition(s) {missing}")
    start_offset, start_time = params.get("start_offset"), params.get("start_time")
    end_offset, end_time = params.get("end_offset"), params.get("end_time")
    if (start_offset is None) == (start_time in (None, "")):
        raise ValueError("backfill params: give exactly one of 'start_offset' and 'start_time'")
    if end_offset is not None and end_time not in (None, ""):
        raise ValueError("backfill params: give at most one of 'end_offset' and 'end_time'")
    high = {tp: hw for tp, (_, hw) in kafka.watermarks(tps).items()}
    starts = (
        dict.fromkeys(tps, _param_int("start_offset", start_offset))
        if start_offset is not None
        else kafka.offsets_for_timestamp(tps, _epoch_ms("start_time", str(start_time)))
    )
    if end_offset is not None:
        ends = dict.fromkeys(tps, _param_int("end_offset", end_offset))
    elif end_time not in (None, ""):
        ends = kafka.offsets_for_timestamp(tps, _epoch_ms("end_time", str(end_time)))
    else:
        ends = high
    ranges: list[PartitionRange] = []
    for tp in tps:
        start, end = starts[tp], ends[tp]
        if start > end:
            what = "end_offset" if end_offset is not None else "end_time" if end_time else "high watermark"
            raise ValueError(f"backfill of {tp[0]}[{tp[1]}]: start {start} is after the end {end} ({what})")
        if start < end:
            ranges.append(PartitionRange(tp[0], tp[1], start, end))
    return ranges
