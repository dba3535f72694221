"""Debezium change events against plain Avro: the write step on the same rows, in the same run.

Two topics hold the write dataset's records in Avro: plain (:mod:`benchmarks.avro_dataset`) and
as change events (:mod:`benchmarks.cdc_dataset`). The write step runs, alternated per round
(the order rotates, so HBase's drift between runs falls on all), on:

* ``plain``: ``{value_format: avro}``;
* ``cdc``: ``{value_format: avro, envelope: debezium}``: the envelope's cost alone (same
  offset versions, same cells from ``after``): ``ratio_vs_plain``, target 0.9 or more;
* ``cdc_lsn``: the same with ``version: field:source.lsn``, as a CDC pipeline runs: every
  record has its own version, and Thrift1 takes one timestamp per ``mutateRowsTs`` call, so
  each record is its own call (docs/spark.md "Versions from a field"): ``ratio_lsn_vs_plain``,
  reported, no target.

One warm-up round runs first and is not counted: each variant's first run into a fresh
table was its slowest in every earlier run (up to 2x), whichever variant went first, so a
counted first round measured the warm-up as much as the variant. Its rates are reported
(``warmup_records_per_s``). Then the median run of each variant's counted rounds counts. A run
that dead-letters a record is an error.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from benchmarks.dataset import Dataset
from benchmarks.write_step import run_write_step
from benchmarks.write_throughput import ROUNDS, cpu_profile, median_run
from eo_devtools.stack.stack import LocalStack

MAPPINGS: dict[str, dict[str, str]] = {
    "plain": {"value_format": "avro"},
    "cdc": {"value_format": "avro", "envelope": "debezium"},
    "cdc_lsn": {"value_format": "avro", "envelope": "debezium", "version": "field:source.lsn"},
}
RunStep = Callable[[Dataset, dict[str, str], str], dict[str, Any]]


def rotation(rounds: int) -> list[list[str]]:
    """The order of each round's runs: the variants rotated by one per round."""
    names = list(MAPPINGS)
    return [names[r % len(names) :] + names[: r % len(names)] for r in range(rounds)]


def measure(
    plain: Dataset, cdc: Dataset, run_step: RunStep, rounds: int = ROUNDS, warmup_rounds: int = 1
) -> dict[str, Any]:
    """Every variant's counted runs (:func:`rotation`, after ``warmup_rounds`` uncounted ones)
    and its median run. Raises RuntimeError when a run dead-letters a record or the datasets
    differ in size."""
    if plain.records != cdc.records:
        raise RuntimeError(f"datasets differ: {plain} vs {cdc}")
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in MAPPINGS}
    warmup: dict[str, list[dict[str, Any]]] = {name: [] for name in MAPPINGS}
    for index, order in enumerate(rotation(warmup_rounds + rounds)):
        for name in order:
            dataset = plain if name == "plain" else cdc
            result = run_step(dataset, MAPPINGS[name], f"cdc_section_{name}")
            if result.get("bad_records"):
                raise RuntimeError(f"{name} run on {dataset.topic}: {result['bad_records']} bad records")
            (warmup if index < warmup_rounds else runs)[name].append(result)
    return {"runs": {name: median_run(rs) for name, rs in runs.items()}, "rounds": runs, "warmup": warmup}


def run(
    stack: LocalStack, plain: Dataset, cdc: Dataset, *, master: str = "local[2]", rounds: int = ROUNDS
) -> dict[str, Any]:
    """The ``cdc`` section on the stack (see the module)."""
    cores = os.cpu_count() or 1

    def step(dataset: Dataset, mapping: dict[str, str], label: str) -> dict[str, Any]:
        return run_write_step(stack, dataset, master=master, label=label, mapping=mapping)

    measured = measure(plain, cdc, step, rounds)
    median = measured["runs"]
    rate = {name: r["records_per_s"] for name, r in median.items()}
    return {
        "master": master,
        "records": plain.records,
        "partitions": len(plain.ends),
        "megabytes": {"plain": round(plain.megabytes, 1), "cdc": round(cdc.megabytes, 1)},
        "runs": median,
        "rounds": {
            f"{n}_records_per_s": [r["records_per_s"] for r in rs] for n, rs in measured["rounds"].items()
        },
        "warmup_records_per_s": {n: [r["records_per_s"] for r in rs] for n, rs in measured["warmup"].items()},
        "ratio_vs_plain": round(rate["cdc"] / rate["plain"], 2),
        "ratio_lsn_vs_plain": round(rate["cdc_lsn"] / rate["plain"], 2),
        "same_cells": median["plain"].get("cells_written") == median["cdc"].get("cells_written"),
        "cpu": {name: cpu_profile(r, cores) for name, r in median.items()},
    }
