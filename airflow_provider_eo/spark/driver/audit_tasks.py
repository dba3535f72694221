"""Running an audit's range jobs on Spark: one Spark task per range (the Spark ``RangeRunner``).

Contract of :func:`run_audit_on_spark`: each :class:`~airflow_provider_eo.audit.range_jobs.RangeJob`
is one Spark partition; its task audits it with
:func:`~airflow_provider_eo.audit.range_jobs.run_jobs` (the same code ``eo-ledger audit``
runs in its process) and returns one picklable
:class:`~airflow_provider_eo.audit.range_jobs.RangeResult`. The driver gathers only those
results: each range's bounded findings, offset counts, window index and candidates, which
:func:`~airflow_provider_eo.audit.audit_run.audit_window` merges and settles. A task that
raises fails the job: :class:`~airflow_provider_eo.spark.driver.task_runner.TaskFailed`
(nothing is recorded). Like the write step, the SparkContext stays up for the driver's
last act (here: storing the report).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from airflow_provider_eo.audit.range_jobs import RangeJob, RangeResult, RangeSettings, run_jobs
from airflow_provider_eo.spark.driver.task_runner import task_failure


def audit_partition_function(settings: RangeSettings) -> Any:
    """The ``mapPartitions`` function: audits the partition's jobs (one each)."""

    def run_partition(jobs: Iterable[RangeJob]) -> Iterator[RangeResult]:
        from airflow_provider_eo.spark.logs import configure_logging

        configure_logging()
        yield from run_jobs(jobs, settings)

    return run_partition


def run_audit_on_spark(jobs: Iterable[RangeJob], settings: RangeSettings) -> list[RangeResult]:
    """One Spark task per job; their results, in the jobs' order. Raises ``TaskFailed``."""
    from pyspark import SparkConf, SparkContext

    planned = list(jobs)
    if not planned:
        return []
    first = planned[0]
    name = f"eo-audit-{first.epoch.pipeline}-epochs-{first.epoch.epoch_id}-{planned[-1].epoch.epoch_id}"
    sc = SparkContext.getOrCreate(SparkConf().setAppName(name))
    try:
        rdd = sc.parallelize(planned, len(planned)).mapPartitions(audit_partition_function(settings))
        return list(rdd.collect())
    except Exception as exc:
        raise task_failure(exc) from exc
