"""Big records: the write step's MB/s and peak memory as records grow from 300 B to 900 KB.

Three datasets of the benchmark's JSON events over 2 partitions, padded with random hex
(which lz4 cannot shrink, as big payloads rarely shrink much) to about 100 KB and 900 KB
per record, all written with the default settings (``batch_bytes`` 4 MiB):

* ``runs``: the write step on each dataset: records/s, MB/s, peak RSS of its process tree;
* ``rss_ratio_900k_vs_small``: peak RSS with 900 KB records over that with 300 B records;
* at 100 KB, the write step against ``write_bound``: Thrift ``mutateRowsTs`` of pre-built
  batches of the same records, as many per call as the write step's segments hold.
  The two alternate ``rounds`` times and the median run of each counts: ``ratio_vs_bound``
  for the whole ``spark-submit`` (its fixed start and stop included), ``tasks_ratio_vs_bound``
  for its Spark tasks alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow_provider_eo.config.specs import DEFAULT_BATCH_BYTES, MappingSpec
from airflow_provider_eo.spark.records import KafkaRecord
from airflow_provider_eo.spark.task.mapping import build_mapper
from benchmarks import baselines
from benchmarks.dataset import delete_topic, event, produce_dataset, sized_event
from benchmarks.write_step import run_write_step
from benchmarks.write_throughput import median_run
from eo_devtools.stack.stack import LocalStack

PARTITIONS = 2
#: label -> (bytes per record, None: the plain ~300 B event; records in a full / quick run)
DATASETS: dict[str, tuple[int | None, int, int]] = {
    "300B": (None, 200_000, 50_000),
    "100KB": (100_000, 2_000, 500),
    "900KB": (900_000, 400, 100),
}
ROUNDS = 3


def records_per_segment(make: Callable[[int], tuple[bytes, bytes]]) -> int:
    """How many of these records the default byte bound puts in one segment (HBase write)."""
    key, value = make(0)
    mutation = build_mapper(MappingSpec(), "d").map(KafkaRecord("t", 0, 0, key, value))
    assert mutation is not None  # the plain mapping maps every record
    weight = mutation.size_bytes
    return max(1, DEFAULT_BATCH_BYTES // weight)


def run(stack: LocalStack, *, quick: bool = False, rounds: int = ROUNDS) -> dict[str, Any]:
    """``{"runs", "rss_ratio_900k_vs_small", "write_bound_100kb", "ratio_vs_bound_100kb", ...}``."""
    runs: dict[str, dict[str, Any]] = {}
    report: dict[str, Any] = {"partitions": PARTITIONS, "batch_bytes": DEFAULT_BATCH_BYTES}
    for label, (size, full, small) in DATASETS.items():
        make = sized_event(size) if size else event
        dataset = produce_dataset(stack.kafka_bootstrap, small if quick else full, PARTITIONS, make=make)
        try:
            if label != "100KB":
                runs[label] = run_write_step(stack, dataset, label="big_records")
                continue
            per_segment = records_per_segment(make)
            steps, bounds = [], []
            for _ in range(rounds):
                steps.append(run_write_step(stack, dataset, label="big_records"))
                bounds.append(
                    baselines.write_bound(stack, dataset, batch_size=per_segment, distinct=200, make=make)
                )
            runs[label] = median_run(steps)
            step = runs[label]
            report["tasks_mb_per_s_100kb"] = round(
                step["mb_per_s"] * step["tasks_records_per_s"] / step["records_per_s"], 2
            )
            report["write_bound_100kb"] = median_run(bounds)
            report["records_per_segment_100kb"] = per_segment
            report["rounds_100kb"] = {
                "write_step_mb_per_s": [r["mb_per_s"] for r in steps],
                "write_bound_mb_per_s": [r["mb_per_s"] for r in bounds],
            }
        finally:
            delete_topic(stack.kafka_bootstrap, dataset.topic)
    report["runs"] = runs
    report["rss_ratio_900k_vs_small"] = round(runs["900KB"]["peak_rss_mb"] / runs["300B"]["peak_rss_mb"], 3)
    report["rss_ratio_100k_vs_small"] = round(runs["100KB"]["peak_rss_mb"] / runs["300B"]["peak_rss_mb"], 3)
    bound = report["write_bound_100kb"]["mb_per_s"]
    report["ratio_vs_bound_100kb"] = round(runs["100KB"]["mb_per_s"] / bound, 2)
    report["tasks_ratio_vs_bound_100kb"] = round(report["tasks_mb_per_s_100kb"] / bound, 2)
    return report
