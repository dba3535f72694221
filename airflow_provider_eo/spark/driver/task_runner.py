"""Running an epoch's write tasks on Spark: task ranges packed into Spark tasks (``task_packing``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_eo.errors import TaskError
from airflow_provider_eo.spark.driver.task_packing import pack_tasks
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.task_errors import TaskErrorData
from airflow_provider_eo.spark.task.task_pack import pack_partition_function
from airflow_provider_eo.spark.task.write_task import TaskSettings


class TaskFailed(TaskError, RuntimeError):
    """A Spark task raised; the message is the task's error.

    ``error`` is the executor's ``EoError`` as data (its message is then
    ``RangeReadError: cannot read ...``), or None for an unexpected failure (the
    message is then the first line of Spark's error).
    """

    def __init__(self, message: str, error: TaskErrorData | None = None) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True)
class SparkTasks:
    """What the tasks returned: each task's metrics, and when the job ran on the driver's
    monotonic clock (``time.monotonic()``): ``started`` when the tasks were submitted (the
    SparkContext up), ``ended`` when the last result arrived; ``spark_tasks``: how many Spark
    tasks carried the ranges (None: one per range, a runner that does not pack)."""

    metrics: list[dict[str, Any]]
    started: float
    ended: float
    spark_tasks: int | None = None


def run_on_spark(settings: TaskSettings, tasks: Sequence[TaskRange]) -> SparkTasks:
    """The task ranges packed into Spark tasks (``task_packing.pack_tasks`` with
    ``settings.split_size`` and the context's ``defaultParallelism`` as slots); returns one
    metrics dict per range, the job's times and the number of Spark tasks.

    Raises :class:`TaskFailed` when a task fails (Spark aborts the job).

    The SparkContext stays up: the driver votes right after the job, and the context stops
    when the application's process ends (under ``spark-submit`` the JVM's shutdown hook
    stops it; under a gateway PySpark started itself, the gateway goes with the process).
    ``SparkContext.stop()`` would add up to a second to every epoch, all of it spent
    waiting for PySpark's accumulator server to notice the stop (its request handler polls
    once a second), before the vote.
    """
    from pyspark import SparkConf, SparkContext

    conf = SparkConf().setAppName(f"eo-write-{settings.pipeline}-epoch-{settings.epoch_id}")
    sc = SparkContext.getOrCreate(conf)
    try:
        started = time.monotonic()
        packs = pack_tasks(tasks, settings.split_size, sc.defaultParallelism)
        rdd = sc.parallelize(packs, len(packs)).mapPartitions(pack_partition_function(settings))
        metrics = rdd.collect()
        return SparkTasks(metrics, started, time.monotonic(), len(packs))
    except Exception as exc:
        raise task_failure(exc) from exc


def task_failure(exc: BaseException) -> TaskFailed:
    """The driver's view of a failed Spark job.

    With an executor ``EoError`` in Spark's text (its ``EO_TASK_ERROR`` marker line),
    the decoded data and ``Type: message``; otherwise the first non-blank line of
    Spark's message (at most 500 characters), or the exception's class name.
    """
    text = str(exc)
    error = TaskErrorData.find(text)
    if error is not None:
        return TaskFailed(str(error), error)
    lines = [line for line in text.splitlines() if line.strip()]
    return TaskFailed(lines[0][:500] if lines else type(exc).__name__)
