"""Cost that follows the records, not the partitions: the same records over few or many partitions.

20,000 records of 100 bytes (key plus value; ``--quick``: the same) over 8, 400 and 4,000
partitions, each written once by the write step (spark-submit, ``local[2]``, every pipeline
setting the default: ``split_size`` 100,000). Per run: the Spark tasks' time (the vote's
``spark_tasks_s``: from the tasks' submission to the last result), the number of Spark tasks
(``spark_task_count``) and of task ranges (``tasks``), and the whole run (spark-submit's start
to its exit). The figure of the target: the 400-partition run's Spark time over the
8-partition run's (``ratio_400_vs_8``, target <= 1.3).
"""

from __future__ import annotations

from typing import Any

from benchmarks.dataset import delete_topic, produce_dataset
from benchmarks.write_step import run_write_step
from eo_devtools.stack.stack import LocalStack

RECORDS = 20_000
RECORD_BYTES = 100
PARTITIONS = (8, 400, 4_000)


def hundred_byte_record(i: int) -> tuple[bytes, bytes]:
    """Key plus value of exactly :data:`RECORD_BYTES` bytes: ``k<i>`` and a padded JSON value."""
    key = f"k{i:07d}".encode()
    head = f'{{"i":{i},"p":"'.encode()
    pad = RECORD_BYTES - len(key) - len(head) - 2
    return key, head + b"x" * pad + b'"}'


def run(stack: LocalStack, partitions: tuple[int, ...] = PARTITIONS) -> dict[str, Any]:
    """``{"runs": {partitions: figures}, "ratio_400_vs_8", "ratio_4000_vs_8"}`` (ratios of the
    Spark tasks' time; a ratio whose runs did not both happen is absent)."""
    runs: dict[str, dict[str, Any]] = {}
    for count in partitions:
        dataset = produce_dataset(stack.kafka_bootstrap, RECORDS, count, make=hundred_byte_record)
        try:
            figures = run_write_step(stack, dataset, label=f"spread{count}", split_size=100_000)
        finally:
            delete_topic(stack.kafka_bootstrap, dataset.topic)
        runs[str(count)] = {
            key: figures[key]
            for key in ("records", "wall_s", "spark_tasks_s", "spark_task_count", "tasks", "peak_rss_mb")
        }
        print(f"partition_spread: {count} partitions: {runs[str(count)]}", flush=True)
    result: dict[str, Any] = {"record_bytes": RECORD_BYTES, "runs": runs}
    base = runs.get("8", {}).get("spark_tasks_s")
    for many in ("400", "4000"):
        if base and many in runs:
            result[f"ratio_{many}_vs_8"] = round(runs[many]["spark_tasks_s"] / base, 2)
    return result
