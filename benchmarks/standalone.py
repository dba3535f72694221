"""Scale-out: the write step on the stack's Spark standalone cluster, 1 worker then 2 workers.

Both runs write the same records (a prefix of the dataset's ranges: at most
:data:`FULL_RECORDS`, :data:`QUICK_RECORDS` with ``quick``) with ``spark-submit`` in client
deploy mode (:func:`benchmarks.write_step.run_write_step`), each worker one core and one
executor. The driver waits until every executor has registered before it starts tasks,
so both workers share the work from the first task. Executors run the stack's executor
Python and get the provider as the ``--py-files`` zip, as on a real cluster.

On the project's 2-core machine the second worker adds a core that the driver, Kafka,
HBase and the first worker already compete for, so the 2-worker figure shows what the
cluster adds on a shared machine, not linear scaling.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from airflow_provider_eo.spark.package_zip import build_zip
from benchmarks.dataset import Dataset
from benchmarks.write_step import run_write_step
from eo_devtools.stack.stack import LocalStack

FULL_RECORDS = 200_000
QUICK_RECORDS = 20_000
WORKER_COUNTS = (1, 2)
MACHINE_NOTE = (
    "workers have 1 core each (2 workers x 1 core vs 1 worker x 1 core) on a 2-core machine "
    "that also runs the driver, Kafka, HBase and PostgreSQL"
)


def prefix(dataset: Dataset, records: int) -> Dataset:
    """The first ``records`` records of ``dataset``, split over its partitions in proportion.

    ``value_bytes`` is scaled by the same fraction (records are of near-equal size).
    """
    if records >= dataset.records:
        return dataset
    ends = tuple(end * records // dataset.records for end in dataset.ends)
    return replace(dataset, ends=ends, value_bytes=dataset.value_bytes * sum(ends) // dataset.records)


def cluster_conf(stack: LocalStack, workers: int, package_zip: Path) -> dict[str, str]:
    """Spark conf of one run on ``workers`` one-core workers (client mode, loopback)."""
    return {
        "spark.pyspark.python": str(stack.spark_executor_python),
        "spark.submit.pyFiles": str(package_zip),
        "spark.driver.host": "127.0.0.1",
        "spark.executor.cores": "1",
        "spark.cores.max": str(workers),
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "300s",
    }


def run(stack: LocalStack, dataset: Dataset, *, quick: bool) -> dict[str, Any]:
    """Measure the write step at 1 and at 2 workers; returns ``{"standalone": {...}}``.

    ``"1"`` and ``"2"`` are records/s from spark-submit's start to its exit; ``detail``
    holds each run's figures, the ratios (wall and Spark tasks only) and how the cluster
    was shaped. The cluster is resized by :meth:`LocalStack.spark_up` and stopped
    afterwards (left with its former size if it was running before). Raises
    RuntimeError when a run fails or votes another record count.
    """
    data = prefix(dataset, QUICK_RECORDS if quick else FULL_RECORDS)
    before = stack.spark_workers
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="eo-bench-standalone-") as tmp:
        package = build_zip(Path(tmp) / "airflow_provider_eo.zip")
        try:
            for workers in WORKER_COUNTS:
                stack.spark_up(workers)
                runs[str(workers)] = run_write_step(
                    stack,
                    data,
                    master=stack.spark_master_url,
                    conf=cluster_conf(stack, workers, package),
                    label=f"standalone_{workers}w",
                )
        finally:
            if before:
                stack.spark_up(before)
            else:
                stack.spark_down()
    one, two = runs["1"], runs["2"]
    return {
        "standalone": {
            "1": one["records_per_s"],
            "2": two["records_per_s"],
            "detail": {
                "records": data.records,
                "partitions": len(data.ends),
                "ratio_2_vs_1": round(two["records_per_s"] / one["records_per_s"], 2),
                "tasks_ratio_2_vs_1": round(two["tasks_records_per_s"] / one["tasks_records_per_s"], 2),
                "runs": runs,
                "workers": MACHINE_NOTE,
                "deploy_mode": "client",
                "meter": "client_cpu and peak_rss cover spark-submit's process tree (the driver); "
                "executors run under the workers",
            },
        }
    }
