"""Peak memory of the write step: the same write at N and at 10 x N records.

The peak is the largest resident set of the ``spark-submit`` process tree (driver JVM,
Python daemon and workers) at one sample. A streaming write keeps it flat: each task
holds at most a fetch batch and a few segments whatever its range's size.
"""

from __future__ import annotations

from typing import Any

from benchmarks.dataset import Dataset, delete_topic, produce_dataset
from benchmarks.write_step import run_write_step
from eo_devtools.stack.stack import LocalStack


def run(stack: LocalStack, small: Dataset, small_run: dict[str, Any], *, factor: int = 10) -> dict[str, Any]:
    """Write ``factor`` x ``small``'s records; compare with ``small_run``, the write step on ``small``."""
    large = produce_dataset(stack.kafka_bootstrap, small.records * factor, len(small.ends))
    try:
        large_run = run_write_step(stack, large, label="memory")
    finally:
        delete_topic(stack.kafka_bootstrap, large.topic)
    return {
        "records": [small.records, large.records],
        "peak_rss_mb": [small_run["peak_rss_mb"], large_run["peak_rss_mb"]],
        "records_per_s": [small_run["records_per_s"], large_run["records_per_s"]],
        "ratio": round(large_run["peak_rss_mb"] / small_run["peak_rss_mb"], 3),
    }
