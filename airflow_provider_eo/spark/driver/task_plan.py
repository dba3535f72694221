"""Driver-side planning and accounting: ranges -> Spark tasks, task metrics -> vote metrics."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from airflow_provider_eo.errors import TaskError
from airflow_provider_eo.spark.records import TaskRange

SUMMED = (
    "records", "skipped_offsets", "cells_written", "tombstones", "changes_skipped", "bad_records", "bytes",
    "segments", "schema_fetches",
)  # fmt: skip


class RangeLike(Protocol):
    """A ledger range: ``[start, end)`` of one topic-partition."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


def split_range(rng: RangeLike, split_size: int) -> list[TaskRange]:
    """Contiguous sub-ranges of at most ``split_size`` offsets, sizes differing by at most one.

    Like Spark's ``minPartitions`` for Kafka: ``ceil(n / split_size)`` parts. Empty
    ranges give no sub-range.
    """
    if split_size < 1:
        raise ValueError(f"split_size must be >= 1, got {split_size}")
    count = rng.end - rng.start
    if count <= 0:
        return []
    parts = math.ceil(count / split_size)
    bounds = [rng.start + count * i // parts for i in range(parts + 1)]
    return [TaskRange(rng.topic, rng.partition, a, b) for a, b in itertools.pairwise(bounds)]


def plan_tasks(
    ranges: Iterable[RangeLike],
    split_size: int,
    selection: Mapping[tuple[str, int], Sequence[int]] | None = None,
) -> list[TaskRange]:
    """Every non-empty range split into task ranges, in ledger order.

    With ``selection`` (a replay epoch's offsets per partition, ascending), each task
    carries the selected offsets inside its sub-range (``TaskRange.offsets``; a partition
    without any: an empty tuple), and writes only those.
    """
    tasks = [sub for rng in ranges for sub in split_range(rng, split_size)]
    if selection is None:
        return tasks
    return [_with_offsets(task, selection.get((task.topic, task.partition), ())) for task in tasks]


def _with_offsets(task: TaskRange, offsets: Sequence[int]) -> TaskRange:
    low, high = bisect.bisect_left(offsets, task.start), bisect.bisect_left(offsets, task.end)
    return TaskRange(task.topic, task.partition, task.start, task.end, tuple(offsets[low:high]))


class CoverageError(TaskError, RuntimeError):
    """Task results do not cover the epoch's ranges exactly (never voted)."""


def aggregate_metrics(
    ranges: Sequence[RangeLike], task_metrics: Sequence[dict[str, Any]], duration_s: float
) -> dict[str, Any]:
    """The vote's metrics: epoch totals, per-partition records, task count and duration.

    ``schema_fetches`` is the sum of the tasks' registry requests and ``schema_ids`` the
    sorted union of the schema ids they resolved (both 0 / [] for plain formats; a task
    metric without them counts as none).

    Per partition and in total, ``records + skipped_offsets`` is the size of the ranges
    (every offset is either a record read or an offset without a readable record).

    Raises CoverageError when the tasks do not cover every offset of every range exactly
    once (a partial range must never be voted).
    """
    covered: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for m in task_metrics:
        covered.setdefault((m["topic"], m["partition"]), []).append((m["start"], m["end"]))
    for rng in ranges:
        expected = [(rng.start, rng.end)] if rng.end > rng.start else []
        pieces = sorted(covered.pop((rng.topic, rng.partition), []))
        merged = _merge(pieces)
        if merged != expected:
            raise CoverageError(
                f"tasks cover {pieces} of {rng.topic}/{rng.partition}, expected [{rng.start}, {rng.end})"
            )
    if covered:
        raise CoverageError(f"tasks reported partitions outside the epoch: {sorted(covered)}")
    totals = {name: sum(int(m.get(name, 0)) for m in task_metrics) for name in SUMMED}
    schema_ids = sorted({int(sid) for m in task_metrics for sid in m.get("schema_ids", ())})
    partitions = []
    for rng in ranges:
        mine = [m for m in task_metrics if (m["topic"], m["partition"]) == (rng.topic, rng.partition)]
        partitions.append(
            {
                "topic": rng.topic,
                "partition": rng.partition,
                "start": rng.start,
                "end": rng.end,
                "records": sum(int(m["records"]) for m in mine),
                "skipped_offsets": sum(int(m["skipped_offsets"]) for m in mine),
                "bad_records": sum(int(m["bad_records"]) for m in mine),
            }
        )
    return {
        **totals,
        "schema_ids": schema_ids,
        "tasks": len(task_metrics),
        "duration_s": round(duration_s, 3),
        "partitions": partitions,
    }


def _merge(pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in pieces:
        if merged and merged[-1][1] == start:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged
