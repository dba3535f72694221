"""Scaling on the machine at hand: records/s against Spark tasks per core, and CPU per component.

On the project's 2 cores every server (Kafka, HBase, Thrift, PostgreSQL) shares the cores
with Spark, so a second worker or executor adds no CPU; what can be shown is how the write
step uses the cores it has, and what each record costs each component, for capacity
arithmetic on machines that have more (``docs/scale.md``).

* **Tasks per core**: the write step (:func:`benchmarks.write_step.run_write_step`) on the
  same records with ``local[N]`` (N concurrent tasks: 0.5 to 2 per core) and with each Kafka
  partition split into 1 or 2 tasks (``spark.split_size``). Configurations alternate
  ``rounds`` times; the median run of each counts.
* **CPU per component** (:mod:`benchmarks.cpu_components`): the reference run
  (:data:`REFERENCE`: ``local[2]``, one task per partition) minus a run of one record per
  partition (the fixed cost of a run: spark-submit, the JVM, the SparkContext, the Python
  workers' start) gives each component's CPU per record; the fixed run's CPU is each
  component's cost per run.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from benchmarks.dataset import Dataset
from benchmarks.write_step import run_write_step
from benchmarks.write_throughput import ROUNDS, median_run
from eo_devtools.stack.stack import LocalStack

FULL_RECORDS = 300_000
QUICK_RECORDS = 30_000


@dataclass(frozen=True)
class Shape:
    """``local[slots]`` with each partition's range split into ``splits`` tasks."""

    slots: int
    splits: int

    @property
    def name(self) -> str:
        """e.g. ``local[2] x1``."""
        return f"local[{self.slots}] x{self.splits}"

    def split_size(self, dataset: Dataset) -> int:
        """Records per task that cut the largest partition range into ``splits`` tasks."""
        return max(1, math.ceil(max(dataset.ends) / self.splits))


SHAPES = (Shape(1, 1), Shape(2, 1), Shape(4, 1), Shape(2, 2), Shape(4, 2))
REFERENCE = Shape(2, 1)

RunShape = Callable[[Shape, Dataset], dict[str, Any]]


def prefix(dataset: Dataset, records: int) -> Dataset:
    """The first ``records`` records of ``dataset``, split over its partitions in proportion
    (at least one per partition); ``value_bytes`` scaled by the same fraction."""
    if records >= dataset.records:
        return dataset
    ends = tuple(max(1, end * records // dataset.records) for end in dataset.ends)
    return replace(dataset, ends=ends, value_bytes=dataset.value_bytes * sum(ends) // dataset.records)


def measure(dataset: Dataset, run_shape: RunShape, rounds: int = ROUNDS) -> dict[str, Any]:
    """Every shape ``rounds`` times, round ``r`` starting ``r`` shapes later; then one run of
    one record per partition at :data:`REFERENCE`. The median run of each shape, every
    round's rate, and the fixed run."""
    runs: dict[Shape, list[dict[str, Any]]] = {shape: [] for shape in SHAPES}
    for r in range(rounds):
        for i in range(len(SHAPES)):
            shape = SHAPES[(r + i) % len(SHAPES)]
            runs[shape].append(run_shape(shape, dataset))
    fixed = run_shape(REFERENCE, prefix(dataset, len(dataset.ends)))
    return {"runs": {shape: median_run(rs) for shape, rs in runs.items()}, "rounds": runs, "fixed": fixed}


def cpu_per_component(reference: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    """Per component: CPU microseconds per record beyond the fixed run (never below 0) and
    CPU seconds of the fixed run itself."""
    records = reference["records"] - fixed["records"]
    ref, base = reference["components_us_per_record"], fixed["components_us_per_record"]
    seconds = {name: us * reference["records"] / 1e6 for name, us in ref.items()}
    fixed_s = {name: us * fixed["records"] / 1e6 for name, us in base.items()}
    per_record = {
        name: round(max(0.0, seconds[name] - fixed_s.get(name, 0.0)) * 1e6 / records, 1)
        for name in sorted(seconds)
    }
    return {
        "per_record_us": per_record,
        "per_record_us_total": round(sum(per_record.values()), 1),
        "fixed_s_per_run": {name: round(value, 2) for name, value in sorted(fixed_s.items())},
    }


def summarize(measured: dict[str, Any], dataset: Dataset, cores: int) -> dict[str, Any]:
    """The section's report (see :func:`run`)."""
    runs: dict[Shape, dict[str, Any]] = measured["runs"]
    one_task_each = [shape for shape in SHAPES if shape.splits == 1]
    return {
        "records": dataset.records,
        "partitions": len(dataset.ends),
        "cores": cores,
        "records_per_s_by_tasks_per_core": {
            f"{shape.slots / cores:g}": runs[shape]["records_per_s"] for shape in one_task_each
        },
        "shapes": {
            shape.name: {
                "tasks_per_core": round(shape.slots / cores, 2),
                "tasks": len(dataset.ends) * shape.splits,
                "records_per_s": run["records_per_s"],
                "tasks_records_per_s": run["tasks_records_per_s"],
                "rounds_records_per_s": [r["records_per_s"] for r in measured["rounds"][shape]],
                "cores_busy": round(
                    (run["client_cpu_s_per_million"] + run["server_cpu_s_per_million"])
                    * run["records_per_s"]
                    / 1e6,
                    2,
                ),
            }
            for shape, run in runs.items()
        },
        "reference": REFERENCE.name,
        "cpu": cpu_per_component(runs[REFERENCE], measured["fixed"]),
        "runs": {shape.name: run for shape, run in runs.items()},
        "fixed_run": measured["fixed"],
    }


def run(stack: LocalStack, dataset: Dataset, *, quick: bool, rounds: int = ROUNDS) -> dict[str, Any]:
    """The section on ``dataset`` (at most its first :data:`FULL_RECORDS` records, or
    :data:`QUICK_RECORDS` and one round with ``quick``): ``{"scaling": {...}}`` with
    ``records_per_s_by_tasks_per_core`` (one task per partition), every shape's figures, and
    ``cpu``: per component, microseconds per record and the fixed seconds of a run. Raises
    RuntimeError when a run fails or votes another record count."""
    data = prefix(dataset, QUICK_RECORDS if quick else FULL_RECORDS)

    def run_shape(shape: Shape, part: Dataset) -> dict[str, Any]:
        return run_write_step(
            stack,
            part,
            master=f"local[{shape.slots}]",
            label=f"scaling_{shape.slots}_{shape.splits}",
            split_size=shape.split_size(part),
        )

    measured = measure(data, run_shape, 1 if quick else rounds)
    return {"scaling": summarize(measured, data, os.cpu_count() or 1)}
