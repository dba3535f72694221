"""What a backfill DAG run asks for, read from Airflow's forms into a typed request.

The backfill DAG's Trigger form (``dags/backfill_params.py``: ``topics``, ``partitions``,
``start_offset`` / ``start_time``, ``end_offset`` / ``end_time``,
``dead_letters_of_epoch``), the run conf's ``replay_dead_letters`` (what ``eo-ledger
dead-letters replay`` sends), a run's data interval and an operator's ``ranges``
argument become one :data:`~airflow_provider_eo.ledger.planning.backfill_request.BackfillRequest`
(:func:`request_of`), which the protocol plans and reserves. The names of the form's
fields and of the run conf key live here and in ``dags/backfill_params.py`` only.

Every function raises ``ValueError`` naming the param, key or range entry at fault.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from airflow_provider_eo.ledger.model.epoch import PartitionRange
from airflow_provider_eo.ledger.planning.backfill_request import (
    BackfillRequest,
    DataInterval,
    ExplicitRanges,
    OffsetWindow,
    PartitionChoice,
)
from airflow_provider_eo.ledger.planning.replay_plan import FILTER_FIELDS, ReplayFilter, SelectedRange

#: The Trigger form's param: replay the unresolved dead letters of this epoch.
EPOCH_PARAM = "dead_letters_of_epoch"
#: The DAG run conf key of the generic replay filter (what ``eo-ledger dead-letters replay`` sends).
CONF_KEY = "replay_dead_letters"
#: The Trigger form's range params, which must stay empty in a replay.
RANGE_PARAMS = ("topics", "partitions", "start_offset", "end_offset", "start_time", "end_time")
#: The range params that bound a range (empty in a run over a data interval).
BOUND_PARAMS = ("start_offset", "end_offset", "start_time", "end_time")


def request_of(
    ranges: str | Sequence[Any] | None = None,
    params: Mapping[str, Any] | None = None,
    data_interval: tuple[datetime, datetime] | None = None,
    requested_at: datetime | None = None,
) -> BackfillRequest:
    """The request of a backfill task: explicit ``ranges`` (:func:`parse_ranges`) when
    given (not None, ``""``, ``"None"`` or ``[]``); else a replay (:func:`replay_filter_of`
    ``params``); else, for a run Airflow's backfill created, its ``data_interval``
    narrowed by the form's topics and partitions (:func:`interval_of`); else the Trigger
    form's window (:func:`window_of`), ending at ``requested_at`` (the run's creation)
    when it gives no end. ``ValueError`` for a replay over a data interval."""
    params = params or {}
    if ranges is not None and ranges not in ("", "None", []):
        return ExplicitRanges(tuple(parse_ranges(ranges)))
    replay = replay_filter_of(params)
    if replay is not None:
        if data_interval is not None:
            raise ValueError("a replay of dead letters is a manual run, not a run over a data interval")
        return replay
    if data_interval is not None:
        return interval_of(params, data_interval)
    return window_of(params, until=requested_at)


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


def window_of(params: Mapping[str, Any], *, until: datetime | None = None) -> OffsetWindow:
    """The Trigger form's range: ``topics``, ``partitions``, exactly one of
    ``start_offset`` / ``start_time``, at most one of ``end_offset`` / ``end_time`` (empty
    text counts as not given); ``until`` ends a window the form leaves open."""
    start_time, end_time = params.get("start_time"), params.get("end_time")
    return OffsetWindow(
        choice=choice_of(params),
        start_offset=_optional_int(params, "start_offset"),
        start_time=None if start_time in (None, "") else _moment("start_time", str(start_time)),
        end_offset=_optional_int(params, "end_offset"),
        end_time=None if end_time in (None, "") else _moment("end_time", str(end_time)),
        until=until,
    )


def interval_of(params: Mapping[str, Any], interval: tuple[datetime, datetime]) -> DataInterval:
    """A run's data interval ``(start, end)``, narrowed by the form's ``topics`` and
    ``partitions``; the form's start and end params must be empty (the interval is the
    range)."""
    given = [name for name in BOUND_PARAMS if params.get(name) not in (None, "")]
    if given:
        raise ValueError(
            f"backfill params {given}: a run over a data interval replays that interval; leave them empty"
        )
    start, end = interval
    return DataInterval(start, end, choice_of(params))


def choice_of(params: Mapping[str, Any]) -> PartitionChoice:
    """The form's ``topics`` and ``partitions`` (each empty: all)."""
    return PartitionChoice(
        topics=tuple(params.get("topics") or []),
        partitions=tuple(_param_int("partitions", p) for p in params.get("partitions") or []),
    )


def replay_filter_of(params: Mapping[str, Any], conf: Mapping[str, Any] | None = None) -> ReplayFilter | None:
    """The replay a backfill run asks for: the Trigger form's ``dead_letters_of_epoch`` or
    the run conf's ``replay_dead_letters`` (None: neither, a range backfill).

    ``ValueError`` when both are given, or when a range param is given too (a replay
    writes the dead letters' offsets, not a range: leave them empty)."""
    sources = {**(conf or {}), **params}
    epoch, generic = sources.get(EPOCH_PARAM), sources.get(CONF_KEY)
    if epoch in (None, "") and not generic:
        return None
    if epoch not in (None, "") and generic:
        raise ValueError(f"backfill: give {EPOCH_PARAM!r} or {CONF_KEY!r}, not both")
    given = [name for name in RANGE_PARAMS if sources.get(name) not in (None, "", [])]
    if given:
        raise ValueError(
            f"backfill params {given}: a replay of dead letters writes their own offsets; leave them empty"
        )
    if epoch not in (None, ""):
        if isinstance(epoch, bool) or not str(epoch).strip().isdigit():
            raise ValueError(f"backfill param {EPOCH_PARAM!r}: not an epoch id: {epoch!r}")
        return ReplayFilter(epoch=int(epoch))
    return replay_filter_from_conf(generic or {})


def replay_filter_from_conf(conf: Mapping[str, Any], label: str = CONF_KEY) -> ReplayFilter:
    """A filter from its conf form ``{epoch, topic, partition, from_offset, to_offset,
    reason}`` (absent or None: any). ``ValueError`` naming ``label`` (the conf key, or the
    command that gave the values) and an unknown key, a bad value or an empty filter (a
    replay of everything must say so with a filter)."""
    if not isinstance(conf, Mapping):
        raise ValueError(f"{label} must be an object, got {conf!r}")
    unknown = sorted(set(conf) - set(FILTER_FIELDS))
    if unknown:
        raise ValueError(f"{label}: unknown keys {unknown} (known: {list(FILTER_FIELDS)})")
    values: dict[str, Any] = {}
    for key in FILTER_FIELDS:
        value = conf.get(key)
        if value is None or value == "":
            continue
        if key in ("topic", "reason"):
            if not isinstance(value, str):
                raise ValueError(f"{label}.{key}: not a string: {value!r}")
            values[key] = value
        else:
            if isinstance(value, bool) or not str(value).strip().isdigit():
                raise ValueError(f"{label}.{key}: not a non-negative integer: {value!r}")
            values[key] = int(value)
    if not values:
        raise ValueError(f"{label}: give at least one of {list(FILTER_FIELDS)}")
    return ReplayFilter(**values)


def replay_conf(wanted: ReplayFilter) -> dict[str, Any]:
    """The run conf that asks a backfill run to replay ``wanted`` (``{CONF_KEY: fields}``)."""
    return {CONF_KEY: wanted.given()}


def _optional_int(params: Mapping[str, Any], name: str) -> int | None:
    value = params.get(name)
    return None if value is None else _param_int(name, value)


def _param_int(name: str, value: Any) -> int:
    """``value`` as a non-negative integer, or a ValueError naming the backfill param."""
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).strip().isdigit():
        raise ValueError(f"backfill param {name!r}: not a non-negative integer: {value!r}")
    return int(value)


def _moment(name: str, value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"backfill param {name!r}: not an ISO-8601 date-time: {value!r}") from None
