"""Write throughput: the write step against the hand-written loop and the two bounds.

All four runs read the same dataset (the same ranges). The write step's rate counts
its whole ``spark-submit`` (JVM start included); ``tasks_records_per_s`` counts its
Spark tasks only. The bound is the slower of the read-only and write-only bounds: the
write step has to do both.
"""

from __future__ import annotations

from typing import Any

from benchmarks import baselines
from benchmarks.dataset import Dataset
from benchmarks.write_step import run_write_step
from eo_devtools.stack.stack import LocalStack


def run(stack: LocalStack, dataset: Dataset, *, master: str = "local[2]") -> dict[str, Any]:
    """``{"records", "partitions", "runs": {...}, "ratio_vs_loop", "ratio_vs_bound", ...}``."""
    runs = {
        "write_step": run_write_step(stack, dataset, master=master),
        "hand_loop": baselines.hand_loop(stack, dataset),
        "read_bound": baselines.read_bound(stack, dataset),
        "write_bound": baselines.write_bound(stack, dataset),
    }
    step = runs["write_step"]["records_per_s"]
    bound = min(runs["read_bound"]["records_per_s"], runs["write_bound"]["records_per_s"])
    return {
        "records": dataset.records,
        "partitions": len(dataset.ends),
        "megabytes": round(dataset.megabytes, 1),
        "master": master,
        "runs": runs,
        "ratio_vs_loop": round(step / runs["hand_loop"]["records_per_s"], 2),
        "ratio_vs_bound": round(step / bound, 2),
        "tasks_ratio_vs_loop": round(
            runs["write_step"]["tasks_records_per_s"] / runs["hand_loop"]["records_per_s"], 2
        ),
        "tasks_ratio_vs_bound": round(runs["write_step"]["tasks_records_per_s"] / bound, 2),
    }
