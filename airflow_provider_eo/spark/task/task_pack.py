"""One Spark task carrying a pack of task ranges (``spark/driver/task_packing.py``).

Contract of :func:`run_pack`:

* the pack opens once what its ranges share: one Kafka consumer (``RangeConsumer``, told
  the ranges' read spans in order, so it fetches a window of them at once), the
  schema cache, the mapper, the dead-letter sinks, the HBase writer with its Thrift
  connection and its writer thread (a range's last writes overlap the next range's read);
  everything that makes a range's writes and accounting its own is per range: its segment
  builder (versions derive from its own offsets, as in a task of its own) and its
  :class:`TaskMetrics`; the writer thread groups consecutive small segments of its ranges
  into shared HBase batches, each segment keeping its versions
  (``spark/hbase_sink/segment_batches.py``); dead letters are flushed at the bounds of the
  bad-record handler and once at the pack's end;
* it logs one line at its start and one at its end at INFO (``task start`` / ``task done``
  with ``ranges=``, the totals and ``batches=``); each range's own lines are at DEBUG;
* ranges run one after another in the pack's order, so memory is bounded in bytes as for
  one range (the write task's bounds), never two ranges' segments at once; the reader's
  window adds the records fetched for the next ranges, at most about its pre-fetch bound
  again (``range_window.py``);
* it returns one :class:`TaskMetrics` per range only once every range was read to its end
  and every segment of the pack written; the first range that raises ends the pack (the
  Spark task fails, nothing of the pack counts as written). An ``EoError`` leaves it as
  :class:`ExecutorTaskError` naming that range (an HBase write error: the range being read
  when it surfaced, the pack's last range at the end; its message names every range of the
  batch that failed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from airflow_provider_eo.errors import EoError
from airflow_provider_eo.spark.hbase_sink.thrift_endpoints import spark_task_index
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.bad_records import DeadLetterSink
from airflow_provider_eo.spark.task.range_reader import RangeConsumer
from airflow_provider_eo.spark.task.task_errors import ExecutorTaskError, TaskErrorData
from airflow_provider_eo.spark.task.worker_gc import task_gc
from airflow_provider_eo.spark.task.write_task import (
    TaskMetrics,
    TaskSettings,
    close_task,
    open_task,
    read_ahead_bytes,
    write_range,
)

log = logging.getLogger(__name__)


def run_pack(
    settings: TaskSettings,
    ranges: Sequence[TaskRange],
    dead_letter_sink: DeadLetterSink | None = None,
    task_index: int = 0,
) -> list[TaskMetrics]:
    """Write every range of the pack completely or raise (see the module contract)."""
    started = time.monotonic()
    where = f"pipeline={settings.pipeline} epoch_id={settings.epoch_id} task_index={task_index}"
    log.info("task start %s ranges=%d first=%s", where, len(ranges), ranges[0].label if ranges else "-")
    shared = open_task(settings, dead_letter_sink, task_index)
    spans = [span for span in (rng.read_span for rng in ranges) if span is not None]
    reader = RangeConsumer(settings.kafka_config, read_ahead_bytes(settings), spans)
    results = []
    try:
        for rng in ranges:
            try:
                results.append(
                    write_range(settings, rng, shared, reader, wait_writes=False, log_level=logging.DEBUG)
                )
                if rng is ranges[-1]:
                    shared.writes.finish()
                    shared.handler.flush()
            except EoError as exc:
                data = TaskErrorData.of(exc, settings.pipeline, settings.epoch_id, rng)
                raise ExecutorTaskError(data) from exc
    finally:
        try:
            reader.close()
        finally:
            close_task(shared)
    log.info(
        "task done %s ranges=%d records=%d skipped_offsets=%d cells=%d bad=%d segments=%d batches=%d "
        "duration_s=%.3f",
        where, len(ranges), sum(m.records for m in results), sum(m.skipped_offsets for m in results),
        sum(m.cells_written for m in results), sum(m.bad_records for m in results),
        sum(m.segments for m in results), shared.writes.batches, time.monotonic() - started,
    )  # fmt: skip
    return results


def pack_partition_function(settings: TaskSettings) -> Any:
    """The ``mapPartitions`` function: each Spark partition holds exactly one pack (a tuple
    of TaskRanges), so the partition id (0 outside Spark) is the task index; yields one
    metrics dict per range. A range's ``EoError`` fails the task as ``ExecutorTaskError``;
    any other exception propagates unchanged."""

    def run_partition(packs: Iterable[Sequence[TaskRange]]) -> Iterator[dict[str, Any]]:
        from airflow_provider_eo.spark.logs import configure_logging

        configure_logging()
        index = spark_task_index()
        for pack in packs:
            with task_gc():
                metrics = run_pack(settings, pack, task_index=index)
            yield from (m.to_dict() for m in metrics)

    return run_partition
