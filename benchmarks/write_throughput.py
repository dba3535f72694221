"""Write throughput: the write step against the hand-written loop and the two bounds.

All runs read the same dataset (the same ranges). The write step's rate counts its
whole ``spark-submit`` (JVM start included); ``tasks_records_per_s`` counts its Spark
tasks only. The bound is the slower of the read-only and write-only bounds: the write
step has to do both.

The write step and the write-only bound decide ``ratio_vs_bound`` and both depend on
HBase's state (memstore flushes, compactions, JIT), so they run ``rounds`` times,
alternated, and the median run of each counts; every round's rate is in ``rounds``.
``cpu`` is the profile of each counted run: CPU time per record of the client (the
process tree) and of the servers, the cores they kept busy, and ``ceiling_records_per_s``,
the rate at which that CPU per record would fill every core of the machine.
"""

from __future__ import annotations

import os
from typing import Any

from benchmarks import baselines
from benchmarks.dataset import Dataset
from benchmarks.write_step import run_write_step
from eo_devtools.stack.stack import LocalStack

ROUNDS = 3


def run(
    stack: LocalStack, dataset: Dataset, *, master: str = "local[2]", rounds: int = ROUNDS
) -> dict[str, Any]:
    """``{"records", "partitions", "runs", "rounds", "ratio_vs_loop", "ratio_vs_bound", "cpu", ...}``."""
    steps: list[dict[str, Any]] = []
    puts: list[dict[str, Any]] = []
    for _ in range(rounds):
        steps.append(run_write_step(stack, dataset, master=master))
        puts.append(baselines.write_bound(stack, dataset))
    runs = {
        "write_step": median_run(steps),
        "hand_loop": baselines.hand_loop(stack, dataset),
        "read_bound": baselines.read_bound(stack, dataset),
        "write_bound": median_run(puts),
    }
    step = runs["write_step"]["records_per_s"]
    bound = _bound(runs)
    cores = os.cpu_count() or 1
    return {
        "records": dataset.records,
        "partitions": len(dataset.ends),
        "megabytes": round(dataset.megabytes, 1),
        "master": master,
        "runs": runs,
        "rounds": {
            "write_step_records_per_s": [r["records_per_s"] for r in steps],
            "write_bound_records_per_s": [r["records_per_s"] for r in puts],
        },
        "ratio_vs_loop": round(step / runs["hand_loop"]["records_per_s"], 2),
        "ratio_vs_bound": round(step / bound, 2),
        "tasks_ratio_vs_loop": round(
            runs["write_step"]["tasks_records_per_s"] / runs["hand_loop"]["records_per_s"], 2
        ),
        "tasks_ratio_vs_bound": round(runs["write_step"]["tasks_records_per_s"] / bound, 2),
        "cpu": cpu_profiles(runs, cores),
    }


def cpu_profiles(runs: dict[str, dict[str, Any]], cores: int) -> dict[str, Any]:
    """Each run's CPU profile, and what it means for ``ratio_vs_bound``: the write step's
    CPU ceiling over the bound (``ceiling_ratio_vs_bound``, the most its CPU per record
    allows on this machine) and the share of that ceiling it reached (``share_of_ceiling``)."""
    profiles = {name: cpu_profile(r, cores) for name, r in runs.items()}
    bound = _bound(runs)
    ceiling = profiles["write_step"]["ceiling_records_per_s"]
    step = runs["write_step"]
    outside_tasks_s = step["wall_s"] - step["records"] / step["tasks_records_per_s"]
    return {
        "cores": cores,
        **profiles,
        "ceiling_ratio_vs_bound": round(ceiling / bound, 2),
        "share_of_ceiling": round(runs["write_step"]["records_per_s"] / ceiling, 2),
        "bound": (
            f"CPU: the write step's process tree ({profiles['write_step']['client_us_per_record']} us/record)"
            f" and the stack's servers ({profiles['write_step']['server_us_per_record']} us/record) share"
            f" {cores} cores; all of them busy would allow {ceiling:,} records/s,"
            f" {ceiling / bound:.2f}x the bound; the write-only bound's client needs"
            f" {profiles['write_bound']['client_us_per_record']} us/record. The Spark tasks alone reach"
            f" {step['tasks_records_per_s'] / bound:.2f}x the bound; spark-submit's start and stop"
            f" ({outside_tasks_s:.1f} s of {step['wall_s']:.1f} s) is the rest"
        ),
    }


def _bound(runs: dict[str, dict[str, Any]]) -> int:
    """records/s of the slower bound: the write step has to read and to write."""
    return min(runs["read_bound"]["records_per_s"], runs["write_bound"]["records_per_s"])


def median_run(candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median ``records_per_s`` (the upper one of an even count)."""
    return sorted(candidates, key=lambda r: r["records_per_s"])[len(candidates) // 2]


def cpu_profile(run: dict[str, Any], cores: int) -> dict[str, float]:
    """CPU microseconds per record (client, servers, both), cores busy, and the rate at
    which that CPU per record would keep all ``cores`` busy."""
    per_record_us = run["client_cpu_s_per_million"] + run["server_cpu_s_per_million"]
    return {
        "client_us_per_record": run["client_cpu_s_per_million"],
        "server_us_per_record": run["server_cpu_s_per_million"],
        "cores_busy": round(per_record_us * run["records_per_s"] / 1e6, 2),
        "ceiling_records_per_s": round(cores * 1e6 / per_record_us),
    }
