"""The write step's driver: check the epoch, run one Spark task per sub-range, vote.

Contract of :func:`write_epoch` (returns the process exit code):

* ``0``: every range was read to its end and written; the epoch was voted WRITTEN
  with the aggregated metrics (the vote is the last act); or the epoch was already
  WRITTEN/COMMITTED under the given ``--fencing-token`` (a retry: nothing done);
* ``2``: invalid input (unknown pipeline or epoch, epoch of another pipeline,
  missing connection): nothing read, nothing written;
* ``3``: fenced out: the epoch is not RESERVED, or its fencing token differs from
  ``--fencing-token``, at the start (nothing written) or at the vote (nothing
  changed in the ledger);
* ``4``: a task failed (range unreadable, bad record under ``fail``, HBase
  unwritable): the epoch is not voted; the message is the task's own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import Any

from airflow_provider_eo import protocol_points
from airflow_provider_eo.ledger import EpochState, FencedOut, Ledger
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task_plan import aggregate_metrics, plan_tasks
from airflow_provider_eo.spark.task_runner import TaskFailed, run_on_spark
from airflow_provider_eo.spark.write_task import TaskSettings

log = logging.getLogger(__name__)

SparkRunner = Callable[[TaskSettings, Sequence[TaskRange]], list[dict[str, Any]]]


class ExitCode(IntEnum):
    """Exit status of the write application."""

    OK = 0
    FAILED = 1
    INVALID = 2
    FENCED_OUT = 3
    TASK_FAILED = 4


def warn_keep_deleted_cells(where: str, settings: TaskSettings, tombstones: int) -> None:
    """One warning per epoch that wrote tombstones: Thrift1 cannot show ``KEEP_DELETED_CELLS``,
    and without it a major compaction lets a replay of an older range resurrect deleted cells."""
    log.warning(
        "%s: wrote %d tombstone(s) (family deletes) to HBase table %r family %r; make sure the family "
        "has KEEP_DELETED_CELLS => 'TRUE' (HBase's Thrift1 API cannot show it): without it a major "
        "compaction drops the delete markers and a later replay or backfill of an older range brings "
        "deleted cells back (docs/spark.md, 'Tombstones and major compaction')",
        where, tombstones, settings.hbase_table, settings.column_family,
    )  # fmt: skip


def write_epoch(
    ledger: Ledger,
    pipeline: str,
    epoch_id: int,
    settings_factory: Callable[[], TaskSettings],
    split_size: int,
    *,
    fencing_token: str | None = None,
    runner: SparkRunner = run_on_spark,
) -> ExitCode:
    """Write and vote one epoch (see the module contract); never raises for the cases listed."""
    epoch = ledger.get_epoch(epoch_id)
    where = f"pipeline={pipeline} epoch_id={epoch_id}"
    if epoch.pipeline != pipeline:
        log.error("%s: epoch belongs to pipeline %r: nothing written", where, epoch.pipeline)
        return ExitCode.INVALID
    already_voted = epoch.state in (EpochState.WRITTEN, EpochState.COMMITTED)
    if already_voted and fencing_token is not None and fencing_token == epoch.fencing_token:
        log.info("%s: epoch already %s under this token (a retry): nothing to do", where, epoch.state.value)
        return ExitCode.OK
    if epoch.state != EpochState.RESERVED:
        log.error("%s: epoch is %s, not RESERVED: nothing written, not voted", where, epoch.state.value)
        return ExitCode.FENCED_OUT
    token = fencing_token or epoch.fencing_token
    if token != epoch.fencing_token:
        log.error("%s: fencing token does not match the epoch's: nothing written, not voted", where)
        return ExitCode.FENCED_OUT
    settings = settings_factory()
    tasks = plan_tasks(epoch.ranges, split_size)
    ranges_text = " ".join(f"{r.topic}/{r.partition}[{r.start},{r.end})" for r in epoch.ranges)
    log.info("%s: writing ranges=%s tasks=%d split_size=%d", where, ranges_text, len(tasks), split_size)
    started = time.monotonic()
    try:
        results = runner(settings, tasks) if tasks else []
    except TaskFailed as exc:
        log.error("%s: task failed, epoch not voted: %s", where, exc)
        return ExitCode.TASK_FAILED
    metrics = aggregate_metrics(epoch.ranges, results, time.monotonic() - started)
    protocol_points.passed("spark.after_last_batch")
    try:
        ledger.vote_written(epoch_id, token, metrics)
    except FencedOut as exc:
        log.error("%s: %s; nothing changed in the ledger", where, exc)
        return ExitCode.FENCED_OUT
    protocol_points.passed("spark.after_vote")
    if metrics["tombstones"]:
        warn_keep_deleted_cells(where, settings, int(metrics["tombstones"]))
    log.info(
        "%s: voted WRITTEN records=%d cells=%d tombstones=%d bad=%d tasks=%d duration_s=%.3f",
        where, metrics["records"], metrics["cells_written"], metrics["tombstones"],
        metrics["bad_records"], metrics["tasks"], metrics["duration_s"],
    )  # fmt: skip
    return ExitCode.OK
