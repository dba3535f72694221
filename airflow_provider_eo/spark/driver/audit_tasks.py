"""Running an audit's range jobs on Spark: one Spark task per range (the Spark ``RangeRunner``).

Contract of :func:`run_audit_on_spark`: each :class:`~airflow_provider_eo.audit.range_jobs.RangeJob`
is one Spark partition; its task audits it, under the index budget divided by the executor's
task slots (``sc.defaultParallelism``: that many range states exist at once;
:meth:`~airflow_provider_eo.audit.row_buckets.RowBuckets.per_task`), with
:func:`~airflow_provider_eo.audit.range_jobs.run_jobs` (the same code ``eo-ledger audit``
runs in its process) and returns one picklable
:class:`~airflow_provider_eo.audit.range_jobs.RangeResult`. The driver gathers only those
results: each range's bounded findings, offset counts, window index and candidates, which
:func:`~airflow_provider_eo.audit.audit_run.audit_window` merges and settles. A range
whose audit raises answers one ``range_failed`` finding from its task
(:func:`~airflow_provider_eo.audit.range_jobs.failed_range`). A task that dies outside
Python's reach (its worker killed, an executor lost) fails the job; the jobs are then run
one Spark job each, and a range whose own job fails too answers ``range_failed`` with
Spark's error (:func:`~airflow_provider_eo.spark.driver.task_runner.task_failure`'s text),
so the audit is stored and names the range, never "clean". Like the write step, the
SparkContext stays up for the driver's last act (here: storing the report).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from airflow_provider_eo.audit.range_jobs import RangeJob, RangeResult, RangeSettings, failed_range, run_jobs
from airflow_provider_eo.spark.driver.task_runner import task_failure

log = logging.getLogger(__name__)


def audit_partition_function(settings: RangeSettings) -> Any:
    """The ``mapPartitions`` function: audits the partition's jobs (one each)."""

    def run_partition(jobs: Iterable[RangeJob]) -> Iterator[RangeResult]:
        from airflow_provider_eo.spark.logs import configure_logging

        configure_logging()
        yield from run_jobs(jobs, settings)

    return run_partition


def run_audit_on_spark(jobs: Iterable[RangeJob], settings: RangeSettings) -> list[RangeResult]:
    """One Spark task per job; their results, in the jobs' order (see the module contract)."""
    from pyspark import SparkConf, SparkContext

    planned = list(jobs)
    if not planned:
        return []
    first = planned[0]
    name = f"eo-audit-{first.epoch.pipeline}-epochs-{first.epoch.epoch_id}-{planned[-1].epoch.epoch_id}"
    sc = SparkContext.getOrCreate(SparkConf().setAppName(name))
    settings = replace(settings, buckets=settings.buckets.per_task(sc.defaultParallelism))
    run = audit_partition_function(settings)
    try:
        return list(sc.parallelize(planned, len(planned)).mapPartitions(run).collect())
    except Exception as exc:  # a task died: find the ranges that did, one job each
        log.warning("audit: a Spark task failed (%s); auditing the ranges one job each", task_failure(exc))
    results: list[RangeResult] = []
    for job in planned:
        try:
            results.extend(sc.parallelize([job], 1).mapPartitions(run).collect())
        except Exception as exc:
            results.append(
                failed_range(job, f"Spark task failed: {task_failure(exc)}", settings.findings_limit)
            )
    return results
