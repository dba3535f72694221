"""Cost that follows the records, not the partitions: the same records over few or many partitions.

20,000 records of 100 bytes (key plus value; ``--quick``: the same) over 8, 400 and 4,000
partitions, each written :data:`ROUNDS` times by the write step in each mode, alternated, after
one uncounted warm-up run per mode (spark-submit, ``local[2]``, every pipeline setting the
default: ``split_size`` 100,000); the run with the median Spark time counts. Per run: the
Spark tasks' time (the vote's ``spark_tasks_s``: from the tasks' submission to the last
result), the number of Spark tasks
(``spark_task_count``) and of task ranges (``tasks``), and the whole run (spark-submit's start
to its exit). The figure of the target: the 400-partition run's Spark time over the
8-partition run's (``ratio_400_vs_8``, target <= 1.3).

Session mode (``modes`` with ``session``: the stack's Spark Connect server, ``local[2]`` as
the submit mode's driver) writes the same topic in the same rounds, each run into a table of
its own: ``session_runs`` with the same figures (the whole run: opening the session to
closing it) and ``session_ratio_400_vs_8`` (same target).
"""

from __future__ import annotations

from typing import Any

from benchmarks.dataset import Dataset, delete_topic, produce_dataset
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


MODES = ("submit", "session")
#: The report's key of each mode's runs, and the prefix of its ratios.
RUNS_KEY = {"submit": "runs", "session": "session_runs"}
RATIO_PREFIX = {"submit": "ratio", "session": "session_ratio"}
FIGURES = ("records", "wall_s", "spark_tasks_s", "spark_task_count", "tasks", "peak_rss_mb")


#: Measured runs per mode and partition count (alternated: submit first in even rounds); the
#: run with the median Spark tasks' time counts.
ROUNDS = 3


def run(
    stack: LocalStack, partitions: tuple[int, ...] = PARTITIONS, modes: tuple[str, ...] = MODES
) -> dict[str, Any]:
    """``{"runs": {partitions: figures}, "ratio_400_vs_8", "ratio_4000_vs_8"}`` for submit
    mode, ``session_runs`` and ``session_ratio_...`` for session mode (ratios of the Spark
    tasks' time; a ratio whose runs did not both happen is absent). Before the first count,
    one uncounted run per mode (``warmup``): the session's first job starts its Python
    workers, and the first spark-submit fills the page cache."""
    runs: dict[str, dict[str, dict[str, Any]]] = {mode: {} for mode in modes}
    warmup: dict[str, float] = {}
    for count in partitions:
        dataset = produce_dataset(stack.kafka_bootstrap, RECORDS, count, make=hundred_byte_record)
        try:
            if not warmup:
                for mode in modes:
                    warmup[mode] = _write(stack, dataset, count, mode)["spark_tasks_s"]
            rounds: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
            for round_ in range(ROUNDS):
                for mode in modes if round_ % 2 == 0 else tuple(reversed(modes)):
                    rounds[mode].append(_write(stack, dataset, count, mode))
            for mode in modes:
                ordered = sorted(rounds[mode], key=lambda figures: figures["spark_tasks_s"])
                runs[mode][str(count)] = {
                    **ordered[len(ordered) // 2],
                    "spark_tasks_s_rounds": [figures["spark_tasks_s"] for figures in rounds[mode]],
                }
        finally:
            delete_topic(stack.kafka_bootstrap, dataset.topic)
    result: dict[str, Any] = {"record_bytes": RECORD_BYTES, "rounds": ROUNDS, "warmup_spark_tasks_s": warmup}
    for mode in modes:
        result[RUNS_KEY[mode]] = runs[mode]
        result.update(spread_ratios(runs[mode], RATIO_PREFIX[mode]))
    return result


def _write(stack: LocalStack, dataset: Dataset, count: int, mode: str) -> dict[str, Any]:
    """One write step of ``dataset`` in ``mode`` into a fresh pipeline: its :data:`FIGURES`."""
    label = f"spread{count}" if mode == "submit" else f"spread{count}_{mode}"
    figures = run_write_step(stack, dataset, label=label, split_size=100_000, mode=mode)
    picked = {key: figures[key] for key in FIGURES}
    print(f"partition_spread: {mode}: {count} partitions: {picked}", flush=True)
    return picked


def spread_ratios(runs: dict[str, dict[str, Any]], prefix: str) -> dict[str, float]:
    """``<prefix>_<n>_vs_8``: the Spark tasks' time over ``n`` partitions (400, 4,000) over
    that of 8, for each ``n`` that ran with 8."""
    base = runs.get("8", {}).get("spark_tasks_s")
    return {
        f"{prefix}_{many}_vs_8": round(runs[many]["spark_tasks_s"] / base, 2)
        for many in ("400", "4000")
        if base and many in runs
    }
