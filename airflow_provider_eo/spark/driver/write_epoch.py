"""The write step's driver: check the epoch, run its sub-ranges packed into Spark tasks, vote.

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

The vote's metrics carry ``tasks`` (the task ranges) and ``spark_task_count`` (the Spark tasks
that carried them, ``task_packing``) and, beside the totals, where the Spark job sat in time: its length
(``spark_tasks_s``, from the tasks' submission to the last result) and the time from its
end to the vote (``vote_after_tasks_s``), both on the driver's monotonic clock, so the
ledger places them from the vote's own time (``ledger/model/phases.py``).

Before its tasks run, an epoch that can break the offset-version contract (offset versions,
a row key template without the Kafka key, several partitions) logs one warning naming the
fix (:mod:`~airflow_provider_eo.spark.driver.version_contract`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from enum import IntEnum

from airflow_provider_eo import protocol_points
from airflow_provider_eo.ledger.model.epoch import PartitionRange
from airflow_provider_eo.ledger.model.ledger_roles import ProtocolStore
from airflow_provider_eo.ledger.model.refusals import EpochOfAnotherPipeline
from airflow_provider_eo.ledger.planning.fencing import AlreadyDone, Fenced
from airflow_provider_eo.ledger.protocol import EpochProtocol
from airflow_provider_eo.spark.driver.task_plan import aggregate_metrics, plan_tasks
from airflow_provider_eo.spark.driver.task_runner import SparkTasks, TaskFailed, run_on_spark
from airflow_provider_eo.spark.driver.version_contract import offset_version_warning
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.write_task import TaskSettings

log = logging.getLogger(__name__)

SparkRunner = Callable[[TaskSettings, Sequence[TaskRange]], SparkTasks]


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


def warn_offset_versions(
    pipeline: str, epoch_id: int, settings: TaskSettings, ranges: Sequence[PartitionRange]
) -> None:
    """Log :func:`offset_version_warning`'s text (once: the driver calls this once per epoch)."""
    warning = offset_version_warning(pipeline, epoch_id, settings.mapping, ranges)
    if warning is not None:
        log.warning("%s", warning)


def write_epoch(
    ledger: ProtocolStore,
    pipeline: str,
    epoch_id: int,
    settings_factory: Callable[[], TaskSettings],
    split_size: int,
    *,
    fencing_token: str | None = None,
    spec_digest: str | None = None,
    runner: SparkRunner = run_on_spark,
) -> ExitCode:
    """Write and vote one epoch (see the module contract); never raises for the cases listed.
    ``spec_digest``: the mapping this writer runs (an epoch reserved with another is fenced)."""
    protocol = EpochProtocol(ledger)
    where = f"pipeline={pipeline} epoch_id={epoch_id}"
    try:
        permission = protocol.begin_write(pipeline, epoch_id, fencing_token, spec_digest)
    except EpochOfAnotherPipeline as exc:
        log.error("%s: %s: nothing written", where, exc)
        return ExitCode.INVALID
    if isinstance(permission, AlreadyDone):
        state = permission.epoch.state.value
        log.info("%s: epoch already %s under this token (a retry): nothing to do", where, state)
        return ExitCode.OK
    if isinstance(permission, Fenced):
        log.error("%s: %s: nothing written, not voted", where, permission.reason)
        return ExitCode.FENCED_OUT
    epoch = permission.epoch
    settings = settings_factory()
    selection = protocol.replay_selection(epoch_id)
    tasks = plan_tasks(epoch.ranges, split_size, selection)
    warn_offset_versions(pipeline, epoch_id, settings, epoch.ranges)
    replayed = "all" if selection is None else str(sum(len(o) for o in selection.values()))
    log.info(
        "%s: writing ranges=%s offsets=%s tasks=%d split_size=%d",
        where, epoch.ranges_brief, replayed, len(tasks), split_size,
    )  # fmt: skip
    started = time.monotonic()
    try:
        ran = runner(settings, tasks) if tasks else SparkTasks([], started, started)
    except TaskFailed as exc:
        log.error("%s: task failed, epoch not voted: %s", where, exc)
        return ExitCode.TASK_FAILED
    metrics = aggregate_metrics(epoch.ranges, ran.metrics, time.monotonic() - started)
    metrics["spark_tasks_s"] = round(ran.ended - ran.started, 3)
    metrics["spark_task_count"] = len(tasks) if ran.spark_tasks is None else ran.spark_tasks
    protocol_points.passed("spark.after_last_batch")
    metrics["vote_after_tasks_s"] = round(time.monotonic() - ran.ended, 3)
    vote = protocol.vote(permission, metrics)
    if isinstance(vote, Fenced):
        log.error("%s: vote fenced out (%s); nothing changed in the ledger", where, vote.reason)
        return ExitCode.FENCED_OUT
    protocol_points.passed("spark.after_vote")
    if metrics["tombstones"]:
        warn_keep_deleted_cells(where, settings, int(metrics["tombstones"]))
    log.info(
        "%s: voted WRITTEN records=%d cells=%d tombstones=%d bad=%d tasks=%d spark_task_count=%d"
        " duration_s=%.3f spark_tasks_s=%.3f",
        where, metrics["records"], metrics["cells_written"], metrics["tombstones"], metrics["bad_records"],
        metrics["tasks"], metrics["spark_task_count"], metrics["duration_s"], metrics["spark_tasks_s"],
    )  # fmt: skip
    return ExitCode.OK
