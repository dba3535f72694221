"""Twenty pipelines at once: epochs through one Spark Connect server against each through its
own ``spark-submit`` (the ``session_fleet`` section).

:data:`FULL` (``--quick``: :data:`QUICK`) pipelines, each over its own topic of 8 partitions
with a pre-filled backlog (:func:`benchmarks.fleet_topics.fleet_topics`: ``backlog`` records
in each partition), each epoch capped at ``records_per_partition`` records per partition (so
every epoch writes ``8 x records_per_partition`` records and the backlog outlasts the window).
The same topics run twice, first in submit mode, then in session mode, each time as pipelines
of their own (own names, consumer groups and ledger rows; one fresh HBase table for all):
:func:`benchmarks.fleet_window.run_window` with ``concurrency`` task processes for
``warm_up_s`` uncounted, then ``window_s`` counted.

``concurrency`` is the number of epochs in flight at once, the same in both modes: 4 on this
machine's 2 cores, so one epoch's waits (Kafka, HBase, the ledger) overlap another's CPU; more
only queue on the CPU (and in submit mode each adds a driver JVM of up to 1 GB: 24 GB of RAM
is not the bound, the cores are). The Connect server is the stack's (``local[2]``, a 512 MB
heap with the serial collector: :mod:`eo_devtools.stack.spark_connect`), restarted before the
session window (outside it: ``server_restart_s``) so that it holds the fleet's sessions only:
every session keeps a Python daemon of its own (about 45 MB each here) until the server's idle
timeout, and the earlier sections' sessions would otherwise count in the fleet's memory.

Figures per mode: epochs per minute in the window, the peak summed RSS of all Spark processes
(:class:`~benchmarks.spark_memory.SparkMemoryMeter`: submit mode's spark-submit JVMs and their
Python; the Connect server's JVM and its Python workers) and of the task processes apart, the
Spark processes' peak summed PSS (shared pages divided among their sharers: forked Python
workers), and the epochs' write, reserve and commit times. ``epochs_ratio`` = session over
submit epochs per minute (target >= 3), ``memory_ratio`` = session over submit peak Spark RSS
(target <= 0.5), ``memory_pss_ratio`` the same in PSS.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from benchmarks.fleet_epoch import EpochSample
from benchmarks.fleet_topics import fleet_topics
from benchmarks.fleet_window import WindowFleet, WindowResult, run_window
from benchmarks.many_pipelines import percentile
from benchmarks.session_write_step import connect_server_pid
from benchmarks.write_step import drop_table, fresh_table
from eo_devtools.stack.stack import LocalStack

MODES = ("submit", "session")
PARTITIONS = 8


@dataclass(frozen=True)
class FleetSize:
    """How big the fleet is and how long it runs (see the module doc)."""

    pipelines: int
    concurrency: int
    warm_up_s: float
    window_s: float
    records_per_partition: int
    backlog: int


FULL = FleetSize(
    pipelines=20, concurrency=4, warm_up_s=60, window_s=300, records_per_partition=10, backlog=6000
)
QUICK = FleetSize(
    pipelines=4, concurrency=2, warm_up_s=15, window_s=60, records_per_partition=10, backlog=2000
)


def fleet_yaml(
    topics: Sequence[str], table: str, mode: str, records_per_partition: int
) -> tuple[str, list[str]]:
    """The pipelines file of one mode's fleet (one pipeline per topic, ``spark.mode: mode``,
    each epoch capped at ``records_per_partition`` per partition) and its pipelines' names."""
    names = [f"sfleet-{mode}-{i:02d}-{topic.rsplit('-', 2)[-2]}" for i, topic in enumerate(topics)]
    entries = [
        {
            "name": name,
            "topics": [topic],
            "hbase": {"table": table},
            "caps": {"max_records_per_partition": records_per_partition},
            "spark": {"mode": mode},
        }
        for name, topic in zip(names, topics, strict=True)
    ]
    return yaml.safe_dump({"pipelines": entries}, sort_keys=False), names


def mode_figures(result: WindowResult, window_s: float) -> dict[str, Any]:
    """One mode's figures (module doc) from its window."""
    counted: list[EpochSample] = result.counted
    writes = sorted(s.write_ms for s in counted) or [0.0]
    return {
        "epochs": len(counted),
        "epochs_run": len(result.samples),
        "epochs_per_minute": round(len(counted) * 60 / window_s, 1),
        "peak_spark_rss_mb": round(result.peak_spark_rss_bytes / 2**20),
        "peak_task_rss_mb": round(result.peak_task_rss_bytes / 2**20),
        "peak_spark_pss_mb": round(result.peak_spark_pss_bytes / 2**20),
        "peak_spark_rss_by_kind_mb": {
            kind: round(size / 2**20) for kind, size in sorted(result.peak_spark_rss_by_kind.items())
        },
        "write_ms": {"p50": round(percentile(writes, 0.5)), "p99": round(percentile(writes, 0.99))},
        "reserve_ms_p50": round(statistics.median([s.reserve_ms for s in counted]), 1) if counted else None,
        "commit_ms_p50": round(statistics.median([s.commit_ms for s in counted]), 1) if counted else None,
        "wall_s": round(result.wall_s, 1),
        "rollbacks": result.rollbacks,
    }


def summarize(modes: dict[str, dict[str, Any]], size: FleetSize) -> dict[str, Any]:
    """The section's report from each mode's :func:`mode_figures`."""
    submit, session = modes["submit"], modes["session"]
    report: dict[str, Any] = {
        "pipelines": size.pipelines,
        "partitions": PARTITIONS,
        "concurrency": size.concurrency,
        "warm_up_s": size.warm_up_s,
        "window_s": size.window_s,
        "records_per_epoch": PARTITIONS * size.records_per_partition,
        "modes": modes,
    }
    if submit["epochs_per_minute"] and session["epochs"]:
        report["epochs_ratio"] = round(session["epochs_per_minute"] / submit["epochs_per_minute"], 2)
    if submit["peak_spark_rss_mb"] and session["peak_spark_rss_mb"]:
        report["memory_ratio"] = round(session["peak_spark_rss_mb"] / submit["peak_spark_rss_mb"], 2)
    if submit.get("peak_spark_pss_mb") and session.get("peak_spark_pss_mb"):
        report["memory_pss_ratio"] = round(session["peak_spark_pss_mb"] / submit["peak_spark_pss_mb"], 2)
    report["bound"] = (
        f"{size.concurrency} epochs in flight on the machine's cores: submit's write step"
        f" p50 {submit['write_ms']['p50']} ms (a spark-submit each),"
        f" session's {session['write_ms']['p50']} ms"
        f" (a job on the Connect server's local[2]); reserve + commit p50"
        f" {submit['reserve_ms_p50']} + {submit['commit_ms_p50']} ms vs"
        f" {session['reserve_ms_p50']} + {session['commit_ms_p50']} ms"
    )
    return report


def run(
    stack: LocalStack, *, quick: bool = False, size: FleetSize | None = None, window_s: float | None = None
) -> dict[str, Any]:
    """Both modes' windows over the same topics; the stack's Connect server must run.
    ``window_s`` replaces the size's counted seconds (``--session-fleet-window-s``)."""
    size = size or (QUICK if quick else FULL)
    if window_s is not None:
        size = replace(size, window_s=window_s)
    connect_server_pid(stack)  # the suite started it: fail before making topics when it does not run
    restarts: list[float] = []
    modes: dict[str, dict[str, Any]] = {}
    with fleet_topics(
        stack.kafka_bootstrap, size.pipelines, PARTITIONS, records=size.backlog, prefix="eo-sfleet"
    ) as topics:
        table = fresh_table(stack, "bench_sfleet")
        try:
            with tempfile.TemporaryDirectory(prefix="eo-sfleet-") as workdir:
                for mode in MODES:
                    text, names = fleet_yaml(
                        [spec.topics[0] for spec in topics.specs if spec.topics],
                        table,
                        mode,
                        size.records_per_partition,
                    )
                    pipelines = Path(workdir) / f"{mode}.yaml"
                    pipelines.write_text(text)
                    fleet = WindowFleet(
                        stack.state_dir, pipelines, names, size.concurrency, size.warm_up_s, size.window_s
                    )
                    roots = [fresh_connect_server(stack, report_to=restarts)] if mode == "session" else []
                    result = run_window(fleet, spark_roots=roots)
                    modes[mode] = mode_figures(result, size.window_s)
                    print(f"session_fleet: {mode}: {modes[mode]}", flush=True)
        finally:
            drop_table(stack, table)
    report = summarize(modes, size)
    report["topics_create_s"], report["topics_produce_s"] = topics.create_s, topics.produce_s
    report["server_restart_s"] = restarts[0] if restarts else None
    return report


def fresh_connect_server(stack: LocalStack, report_to: list[float]) -> int:
    """Restart the stack's Connect server (the time it took appended to ``report_to``), so the
    session window's memory holds the fleet's own sessions only, not the idle Python daemons of
    earlier sections' sessions (a session is kept until the server's idle timeout); its pid."""
    began = time.monotonic()
    stack.spark_connect_down()
    stack.spark_connect_up()
    report_to.append(round(time.monotonic() - began, 1))
    return connect_server_pid(stack)
