"""The write step against Spark's own Kafka source (the ``spark_native`` section).

The peers a Spark user would write instead of the provider (:mod:`benchmarks.spark_native_app`):
``batch`` (``spark.read`` of one bounded offset range, like an epoch) and ``available_now``
(``readStream`` with ``Trigger.AvailableNow`` and a fresh checkpoint), each writing the
provider's own cells with happybase ``Table.batch`` puts from ``foreachPartition``.

First, on a small dataset, :func:`benchmarks.spark_native_peers.check_same_cells` proves that
both peers leave exactly the write step's cells (the section fails otherwise). Then, for each
size, a fresh topic holds the write benchmark's records (:mod:`benchmarks.dataset`) and the
three runs alternate ``rounds`` times, each round starting one run later
(:func:`alternation`), on the same master; the median run of each counts. ``ratio_vs_batch``
and ``ratio_vs_available_now`` are the write step's records/s over each peer's, both from
spark-submit's start to its exit (target: 2 or more at 500k and 1M records);
``tasks_ratio_*`` compare the SparkContext's lifetime alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import pyspark

from benchmarks.dataset import Dataset, delete_topic, produce_dataset
from benchmarks.spark_native_peers import check_same_cells, run_peer
from benchmarks.write_step import run_write_step
from benchmarks.write_throughput import ROUNDS, cpu_profile, median_run
from eo_devtools.stack.jvm_artifacts import jar_list
from eo_devtools.stack.stack import LocalStack

SIZES = (500_000, 1_000_000)
QUICK_SIZES = (20_000, 50_000)
CHECK_RECORDS = 4_000
RUNS = ("write_step", "batch", "available_now")
CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
WHY_COMPATIBLE = (
    "Maven Central serves no spark-sql-kafka-0-10_2.13 4.3.0; 4.2.0 is the nearest release. Same "
    "Scala 2.13 line; its other compile dependencies (hadoop-client-runtime 3.5.0, "
    "scala-parallel-collections 1.2.0, jsr305, kafka-clients' compression and logging jars) are "
    "pyspark's own at the versions it asks for, so only its 4 jars are added. Checked by "
    "cells_check: both peers leave exactly the write step's cells."
)

RunOne = Callable[[str], dict[str, Any]]


def alternation(rounds: int) -> list[tuple[str, ...]]:
    """Each round's order of :data:`RUNS`: round ``r`` starts ``r`` runs later, so each run
    takes each place in turn and HBase's drift falls on all three."""
    return [tuple(RUNS[(r + i) % len(RUNS)] for i in range(len(RUNS))) for r in range(rounds)]


def measure(run_one: RunOne, rounds: int = ROUNDS) -> dict[str, Any]:
    """``run_one(name)`` for every run of :func:`alternation`; the median run of each name
    and every run, by name."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in RUNS}
    for order in alternation(rounds):
        for name in order:
            runs[name].append(run_one(name))
    return {"runs": {name: median_run(rs) for name, rs in runs.items()}, "rounds": runs}


def summarize(measured: dict[str, Any], dataset: Dataset, cores: int) -> dict[str, Any]:
    """One size's report: the median runs, every round's rate, the ratios and CPU profiles."""
    runs = measured["runs"]
    step = runs["write_step"]
    report: dict[str, Any] = {
        "records": dataset.records,
        "partitions": len(dataset.ends),
        "megabytes": round(dataset.megabytes, 1),
        "runs": runs,
        "rounds": {
            f"{name}_records_per_s": [r["records_per_s"] for r in rs]
            for name, rs in measured["rounds"].items()
        },
    }
    for peer in RUNS[1:]:
        report[f"ratio_vs_{peer}"] = round(step["records_per_s"] / runs[peer]["records_per_s"], 2)
        report[f"tasks_ratio_vs_{peer}"] = round(
            step["tasks_records_per_s"] / runs[peer]["tasks_records_per_s"], 2
        )
    report["cpu"] = {
        name: {**cpu_profile(run, cores), "components_us_per_record": run["components_us_per_record"]}
        for name, run in runs.items()
    }
    return report


def run(
    stack: LocalStack,
    *,
    sizes: Sequence[int] = SIZES,
    partitions: int = 8,
    master: str = "local[2]",
    rounds: int = ROUNDS,
) -> dict[str, Any]:
    """The section on the stack (module docstring): ``{"spark_native": {...}}``, with
    ``ratio_vs_batch`` and ``ratio_vs_available_now`` by size (records, as text) and each
    size's report under ``sizes``. Raises RuntimeError when a peer's cells differ from the
    write step's or a run fails."""
    cores = os.cpu_count() or 1
    check_data = produce_dataset(stack.kafka_bootstrap, CHECK_RECORDS, partitions)
    try:
        cells_check = check_same_cells(stack, check_data, master=master)
    finally:
        delete_topic(stack.kafka_bootstrap, check_data.topic)
    by_size: dict[str, dict[str, Any]] = {}
    for records in sizes:
        dataset = produce_dataset(stack.kafka_bootstrap, records, partitions)
        try:

            def run_one(name: str, dataset: Dataset = dataset) -> dict[str, Any]:
                if name == "write_step":
                    return run_write_step(stack, dataset, master=master, label="native_write_step")
                return run_peer(stack, dataset, name, master=master)

            by_size[str(records)] = summarize(measure(run_one, rounds), dataset, cores)
        finally:
            delete_topic(stack.kafka_bootstrap, dataset.topic)
    return {
        "spark_native": {
            "master": master,
            "connector": {
                "artifact": CONNECTOR,
                "jars": [jar.name for jar in jar_list("spark-kafka")],
                "pyspark": pyspark.__version__,
                "why_compatible": WHY_COMPATIBLE,
            },
            "cells_check": cells_check,
            **{
                f"ratio_vs_{peer}": {size: report[f"ratio_vs_{peer}"] for size, report in by_size.items()}
                for peer in RUNS[1:]
            },
            "sizes": by_size,
        }
    }
