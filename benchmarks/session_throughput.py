"""Throughput in session mode: the write step on a Spark Connect session against spark-submit.

Both write the ``write`` section's dataset (the same ranges, a backfill epoch each, a fresh
table each). A warm-up round of each mode comes first and is not counted (the server's JIT
and first Python workers, the driver's class archive); then ``rounds`` rounds, each one run
of each mode, the order alternating from round to round, and the median run of each mode
counts (every round's rate is in ``rounds``). ``ratio`` is session records/s over submit
records/s (target >= 0.95). The submit mode counts its whole ``spark-submit`` (JVM start
included) from ``local[2]`` with the default 1 GB driver; the session mode counts opening the
session to closing it, on the stack's Connect server (``local[2]`` too; its heap sized for
many small jobs: :mod:`eo_devtools.stack.spark_connect`); the server's one-time start is reported
beside (``server``), outside the rates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.dataset import Dataset
from benchmarks.write_step import run_write_step
from benchmarks.write_throughput import median_run
from eo_devtools.stack.stack import LocalStack

ROUNDS = 3
MODES = ("submit", "session")
RUN_KEYS = (
    "wall_s",
    "records_per_s",
    "tasks_records_per_s",
    "spark_tasks_s",
    "spark_task_count",
    "peak_rss_mb",
    "client_cpu_s_per_million",
    "server_cpu_s_per_million",
    "components_us_per_record",
)

WriteRun = Callable[[str], dict[str, Any]]
"""One write of the dataset in a mode (``submit`` or ``session``): its figures."""


def round_order(round_no: int) -> tuple[str, ...]:
    """The modes in the order round ``round_no`` runs them: alternating, so neither is
    always the one that runs on the warmer servers."""
    return MODES if round_no % 2 == 0 else MODES[::-1]


def alternate(write: WriteRun, rounds: int, *, warm_up: bool = True) -> dict[str, list[dict[str, Any]]]:
    """Every counted run of each mode (a warm-up round first, not kept, when ``warm_up``)."""
    if warm_up:
        for mode in MODES:
            write(mode)
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for round_no in range(rounds):
        for mode in round_order(round_no):
            runs[mode].append(write(mode))
    return runs


def summarize(runs: dict[str, list[dict[str, Any]]], server: dict[str, Any]) -> dict[str, Any]:
    """The section's report from :func:`alternate`'s runs and the server's start."""
    counted = {mode: median_run(candidates) for mode, candidates in runs.items()}
    submit, session = counted["submit"], counted["session"]
    return {
        "records": submit["records"],
        "runs": {mode: {key: run.get(key) for key in RUN_KEYS} for mode, run in counted.items()},
        "rounds": {mode: [r["records_per_s"] for r in candidates] for mode, candidates in runs.items()},
        "ratio": round(session["records_per_s"] / submit["records_per_s"], 2),
        "tasks_ratio": round(session["tasks_records_per_s"] / submit["tasks_records_per_s"], 2),
        "server": server,
        "bound": (
            f"submit: {submit['wall_s']:.1f} s of which Spark tasks {submit.get('spark_tasks_s')} s"
            f" (spark-submit's JVM start and stop the rest); session: {session['wall_s']:.1f} s of which"
            f" Spark tasks {session.get('spark_tasks_s')} s (opening the session and planning the rest);"
            f" both share the stack's servers and the machine's cores"
        ),
    }


def run(
    stack: LocalStack, dataset: Dataset, server: dict[str, Any], *, rounds: int = ROUNDS
) -> dict[str, Any]:
    """Alternate the write step in both modes on ``dataset``; ``server`` is
    :func:`benchmarks.session_write_step.connect_server`'s answer."""

    def write(mode: str) -> dict[str, Any]:
        figures = run_write_step(stack, dataset, label=f"sess_{mode}", mode=mode)
        print(f"session_write: {mode}: {figures['records_per_s']:,} records/s", flush=True)
        return figures

    result = summarize(alternate(write, rounds), server)
    result["partitions"] = len(dataset.ends)
    return result
