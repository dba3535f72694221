"""Avro against JSON: the write step on the same records in both formats, in the same run.

Two topics hold the write dataset's records (:func:`benchmarks.dataset.event_fields`): one in
JSON, one in Avro (:mod:`benchmarks.avro_dataset`). The write step runs on each ``rounds``
times, alternated (JSON first in even rounds, Avro first in odd ones, so HBase's drift
between runs falls on both), with default settings: the only difference between the two
pipelines is ``mapping: {value_format: avro}``. The median run of each counts;
``ratio_vs_json`` is Avro's records/s over JSON's (target: 0.9 or more), ``tasks_ratio_vs_json``
the same for the Spark tasks alone. A run that dead-letters a record is an error: the
ratio compares writes of every record, never a rejection.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from benchmarks.dataset import Dataset
from benchmarks.write_step import run_write_step
from benchmarks.write_throughput import ROUNDS, cpu_profile, median_run
from eo_devtools.stack.stack import LocalStack

AVRO_MAPPING = {"value_format": "avro"}

RunStep = Callable[[Dataset, dict[str, str] | None, str], dict[str, Any]]


def alternation(rounds: int) -> list[tuple[str, ...]]:
    """The order of the runs of each round: JSON first in even rounds, Avro first in odd ones."""
    return [("json", "avro") if r % 2 == 0 else ("avro", "json") for r in range(rounds)]


def measure(
    json_data: Dataset, avro_data: Dataset, run_step: RunStep, rounds: int = ROUNDS
) -> dict[str, Any]:
    """Run ``run_step(dataset, mapping, label)`` alternated (:func:`alternation`); the median
    run of each format and the rates of every round. Raises RuntimeError when a run
    dead-letters a record or the two datasets differ in size."""
    if json_data.records != avro_data.records or len(json_data.ends) != len(avro_data.ends):
        raise RuntimeError(f"datasets differ: {json_data} vs {avro_data}")
    inputs = {"json": (json_data, None), "avro": (avro_data, AVRO_MAPPING)}
    runs: dict[str, list[dict[str, Any]]] = {"json": [], "avro": []}
    for order in alternation(rounds):
        for fmt in order:
            dataset, mapping = inputs[fmt]
            result = run_step(dataset, mapping, f"avro_section_{fmt}")
            if result.get("bad_records"):
                raise RuntimeError(f"{fmt} run on {dataset.topic}: {result['bad_records']} bad records")
            runs[fmt].append(result)
    return {"runs": {fmt: median_run(rs) for fmt, rs in runs.items()}, "rounds": runs}


def summarize(measured: dict[str, Any], json_data: Dataset, avro_data: Dataset, cores: int) -> dict[str, Any]:
    """The section's report: sizes, median runs, each round's rate, the ratios and CPU profiles."""
    json_run, avro_run = measured["runs"]["json"], measured["runs"]["avro"]
    return {
        "records": json_data.records,
        "partitions": len(json_data.ends),
        "megabytes": {"json": round(json_data.megabytes, 1), "avro": round(avro_data.megabytes, 1)},
        "runs": measured["runs"],
        "rounds": {
            f"{fmt}_records_per_s": [r["records_per_s"] for r in runs]
            for fmt, runs in measured["rounds"].items()
        },
        "ratio_vs_json": round(avro_run["records_per_s"] / json_run["records_per_s"], 2),
        "tasks_ratio_vs_json": round(avro_run["tasks_records_per_s"] / json_run["tasks_records_per_s"], 2),
        "same_cells": json_run.get("cells_written") == avro_run.get("cells_written"),
        "cpu": {fmt: cpu_profile(run, cores) for fmt, run in measured["runs"].items()},
    }


def run(
    stack: LocalStack,
    json_data: Dataset,
    avro_data: Dataset,
    *,
    master: str = "local[2]",
    rounds: int = ROUNDS,
) -> dict[str, Any]:
    """The ``avro`` section on the stack (see the module); ``master`` as in the write section."""
    cores = os.cpu_count() or 1

    def step(dataset: Dataset, mapping: dict[str, str] | None, label: str) -> dict[str, Any]:
        return run_write_step(stack, dataset, master=master, label=label, mapping=mapping)

    return {
        "master": master,
        **summarize(measure(json_data, avro_data, step, rounds), json_data, avro_data, cores),
    }
