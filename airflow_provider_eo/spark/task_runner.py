"""Running an epoch's write tasks on Spark: one Spark task per :class:`TaskRange`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.write_task import TaskSettings, task_partition_function

_TASK_ERROR = re.compile(r"^airflow_provider_eo\.[\w.]+\.(\w+(?:Error|Record)): (.+)$", re.MULTILINE)


class TaskFailed(RuntimeError):
    """A Spark task raised; the message is the task's error."""


def run_on_spark(settings: TaskSettings, tasks: Sequence[TaskRange]) -> list[dict[str, Any]]:
    """One Spark task per TaskRange; returns each task's metrics dict."""
    from pyspark import SparkConf, SparkContext

    conf = SparkConf().setAppName(f"eo-write-{settings.pipeline}-epoch-{settings.epoch_id}")
    sc = SparkContext.getOrCreate(conf)
    try:
        rdd = sc.parallelize(list(tasks), len(tasks)).mapPartitions(task_partition_function(settings))
        return rdd.collect()
    except Exception as exc:
        raise TaskFailed(task_error_message(exc)) from None
    finally:
        sc.stop()


def task_error_message(exc: BaseException) -> str:
    """The executor's own error line (``RangeReadError: ...``) out of Spark's wrapping."""
    text = str(exc)
    found = _TASK_ERROR.findall(text)
    if found:
        name, message = found[-1]
        return f"{name}: {message.strip()}"
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0][:500] if lines else type(exc).__name__
