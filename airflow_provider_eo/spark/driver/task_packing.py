"""Packing an epoch's task ranges into Spark tasks: cost that follows the records.

Every :class:`TaskRange` of :func:`~airflow_provider_eo.spark.driver.task_plan.plan_tasks`
is still the unit of reading, segmenting and accounting (its own segments, versions,
dead letters and metrics); :func:`pack_tasks` only groups them, so that a Spark task may
carry several partitions' ranges and opens its Kafka consumer, Thrift connection, mapper
and dead-letter sink once for all of them (``spark/task/task_pack.py``).

Contract of :func:`pack_tasks` (pure, no I/O):

* every task range is in exactly one pack; within a pack, ranges keep their order in
  ``tasks`` (ledger order); packs are ordered by their first range;
* the number of packs is ``min(len(tasks), max(slots, ceil(offsets / split_size)))``
  where ``offsets`` is the total offsets to read: as many Spark tasks as the cluster runs
  at once (``slots``), more only when the records need them (one ``split_size`` of
  offsets per task, as a big range is split today); never more packs than ranges;
* packs are balanced by offsets (longest range first onto the lightest pack, ties to the
  pack with fewer ranges, then the lowest index; no pack is empty): a pack holds at most
  ``offsets / packs`` plus one range's offsets, and a range never holds more than
  ``split_size`` offsets (``split_range``);
* memory stays bounded in bytes as in one task: a pack runs its ranges one after another,
  each with the write task's byte bounds, never two at once.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from airflow_provider_eo.spark.records import TaskRange

TaskPack = tuple[TaskRange, ...]


def read_offsets(task: TaskRange) -> int:
    """The offsets ``task`` reads: its whole range, or its replay selection's read span."""
    span = task.read_span
    return 0 if span is None else span.end - span.start


def pack_count(tasks: Sequence[TaskRange], split_size: int, slots: int) -> int:
    """How many Spark tasks carry ``tasks`` (see the module contract).

    Raises ValueError when ``split_size`` or ``slots`` is below 1.
    """
    if split_size < 1:
        raise ValueError(f"split_size must be >= 1, got {split_size}")
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    total = sum(read_offsets(task) for task in tasks)
    return min(len(tasks), max(slots, math.ceil(total / split_size)))


def pack_tasks(tasks: Sequence[TaskRange], split_size: int, slots: int) -> list[TaskPack]:
    """``tasks`` grouped into Spark tasks (see the module contract)."""
    count = pack_count(tasks, split_size, slots)
    if count == 0:
        return []
    heap = [(0, 0, index) for index in range(count)]  # (offsets so far, ranges so far, pack index)
    members: list[list[int]] = [[] for _ in range(count)]
    by_size = sorted(range(len(tasks)), key=lambda i: (-read_offsets(tasks[i]), i))
    for i in by_size:  # an empty pack always comes first: no pack stays empty
        load, size, pack = heapq.heappop(heap)
        members[pack].append(i)
        heapq.heappush(heap, (load + read_offsets(tasks[i]), size + 1, pack))
    packs = [sorted(indexes) for indexes in members]
    packs.sort(key=lambda indexes: indexes[0])
    return [tuple(tasks[i] for i in indexes) for indexes in packs]
