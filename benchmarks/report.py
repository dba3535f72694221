"""The benchmark report: the machine it ran on, the JSON file, and the printed table."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil


def machine() -> dict[str, Any]:
    """CPU model and count, memory, OS, Python and Java versions of this machine."""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in _read("/proc/cpuinfo").splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    java = subprocess.run(
        ["java", "-version"], capture_output=True, text=True, check=False
    ).stderr.splitlines()
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": java[0] if java else None,
    }


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def write_report(report: Mapping[str, Any], path: Path) -> None:
    """Write ``report`` as indented JSON (the parent directory is created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n")


RETIRED_SECTIONS = ("standalone",)
"""Sections the suite no longer has, each its report key (``standalone``, 1 vs 2 workers on 2
shared cores: replaced by ``scaling``)."""


def merge_reports(previous: Mapping[str, Any], fresh: Mapping[str, Any]) -> dict[str, Any]:
    """``previous`` with every key of ``fresh`` replacing its own. ``sections`` becomes the
    union, and ``section_runs`` says when each section was last measured (``finished_at``
    of its run), so each ratio still comes from a single run. Figures of
    :data:`RETIRED_SECTIONS` are dropped."""
    runs = dict(
        previous.get("section_runs")
        or dict.fromkeys(previous.get("sections", []), previous.get("finished_at"))
    )
    runs.update(dict.fromkeys(fresh["sections"], fresh["finished_at"]))
    kept = {key: value for key, value in previous.items() if key not in RETIRED_SECTIONS}
    runs = {name: at for name, at in runs.items() if name not in RETIRED_SECTIONS}
    return {**kept, **fresh, "sections": list(runs), "section_runs": runs}


def session_lines(report: Mapping[str, Any]) -> list[str]:
    """The session-mode sections' rows: each mode's figure beside the other's."""
    lines = []
    server = report.get("session_server")
    if server:
        lines.append(
            f"Spark Connect server: {server['master']}, driver {server['driver_memory']},"
            f" one-time start {server['start_s']} s (None: already running)"
        )
    write = report.get("session_write")
    if write:
        runs = write["runs"]
        lines.append(
            f"session_write, {write['records']:,} records:"
            f" submit {runs['submit']['records_per_s']:,} records/s,"
            f" session {runs['session']['records_per_s']:,} records/s: {write['ratio']}x"
        )
    spread = report.get("partition_spread")
    if spread:
        for mode, key in (("submit", "runs"), ("session", "session_runs")):
            times = {count: run["spark_tasks_s"] for count, run in spread.get(key, {}).items()}
            if times:
                lines.append(f"partition_spread {mode}: Spark tasks' s by partitions {times}")
    fleet = report.get("session_fleet")
    if fleet:
        modes = fleet["modes"]
        lines.append(
            f"session_fleet, {fleet['pipelines']} pipelines x {fleet['partitions']} partitions,"
            f" {fleet['concurrency']} at once, {fleet['window_s']:g} s window: epochs/min submit"
            f" {modes['submit']['epochs_per_minute']} session {modes['session']['epochs_per_minute']}"
            f" ({fleet.get('epochs_ratio')}x); peak Spark RSS MB"
            f" submit {modes['submit']['peak_spark_rss_mb']}"
            f" session {modes['session']['peak_spark_rss_mb']} ({fleet.get('memory_ratio')}x)"
        )
    return lines


def table(report: Mapping[str, Any]) -> str:
    """The figures and the targets as aligned text."""
    lines = []
    write = report.get("write")
    if write:
        lines.append(f"write throughput, {write['records']:,} records over {write['partitions']} partitions:")
        lines.append(
            f"  {'run':<12} {'records/s':>10} {'MB/s':>7} {'client CPU s/M':>15} {'server CPU s/M':>15}"
        )
        for name, run in write["runs"].items():
            lines.append(
                f"  {name:<12} {run['records_per_s']:>10,} {run['mb_per_s']:>7} "
                f"{run['client_cpu_s_per_million']:>15} {run['server_cpu_s_per_million']:>15}"
            )
    big = report.get("big_records")
    if big:
        lines.append(f"big records, default settings (batch_bytes {big['batch_bytes']:,}):")
        lines.append(f"  {'records':<12} {'records/s':>10} {'MB/s':>7} {'peak RSS MB':>12}")
        for name, run in big["runs"].items():
            lines.append(
                f"  {name:<12} {run['records_per_s']:>10,} {run['mb_per_s']:>7} {run['peak_rss_mb']:>12}"
            )
        bound = big["write_bound_100kb"]
        lines.append(
            f"  100 KB write-only bound {bound['mb_per_s']} MB/s: write step {big['ratio_vs_bound_100kb']}x"
            f" (its tasks {big['tasks_ratio_vs_bound_100kb']}x);"
            f" peak RSS 900 KB vs 300 B {big['rss_ratio_900k_vs_small']}x"
        )
    native = report.get("spark_native")
    if native:
        lines.append(
            f"spark_native ({native['connector']['artifact']}, {native['master']}), median records/s:"
        )
        lines.append(
            f"  {'records':<10} {'write step':>10} {'batch':>10} {'avail.Now':>10}"
            f" {'vs batch':>9} {'vs aNow':>8}"
        )
        for size, part in native["sizes"].items():
            rates = [part["runs"][name]["records_per_s"] for name in ("write_step", "batch", "available_now")]
            lines.append(
                f"  {int(size):<10,} {rates[0]:>10,} {rates[1]:>10,} {rates[2]:>10,}"
                f" {part['ratio_vs_batch']:>8}x {part['ratio_vs_available_now']:>7}x"
            )
    lines += session_lines(report)
    if report.get("freshness"):
        lines.extend(freshness_lines(report["freshness"]))
    fleet = report.get("many_pipelines")
    if fleet:
        lines.append(
            f"many pipelines, {fleet['pipelines']} x {fleet['partitions_per_pipeline']} partitions from"
            f" {fleet['processes']} processes: {fleet['epochs_per_s']} epochs/s, reserve + commit"
            f" p50 {fleet['reserve_commit_ms']['p50']} ms p99 {fleet['reserve_commit_ms']['p99']} ms,"
            f" lock waits {fleet['lock_waits']['lock_wait_backend_samples']}, retries {fleet['retries']},"
            f" deadlocks {fleet['database']['deadlocks']}, worker crashes {fleet.get('worker_crashes')}"
        )
    scaling = report.get("scaling")
    if scaling:
        lines.append(f"scaling, {scaling['records']:,} records, records/s by shape (tasks per core):")
        for name, shape in scaling["shapes"].items():
            lines.append(f"  {name:<14} {shape['records_per_s']:>8,} ({shape['tasks_per_core']:g} per core)")
        cpu = scaling["cpu"]
        lines.append(f"  CPU us/record beyond a run's fixed cost ({cpu['per_record_us_total']} in all):")
        lines.append("  " + ", ".join(f"{name} {us}" for name, us in cpu["per_record_us"].items()))
    lines += epoch_overhead_lines(report)
    for key in ("reserve_commit_ms", "memory", "audit", "epoch_overhead_parts"):
        if key in report:
            lines.append(f"{key}: {json.dumps(report[key])}")
    lines.append("targets:")
    for check in report.get("targets", []):
        verdict = {True: "met", False: "NOT MET", None: "not measured"}[check["met"]]
        lines.append(f"  {verdict:<12} {check['target']}: {check['figure']} (target {check['bound']})")
        for key, profile in check.get("profile", {}).items():
            why = profile.get("bound") if isinstance(profile, dict) else None
            lines.append(f"  {'':<12} what bounds it: {why or 'see ' + key + ' in the report'}")
    return "\n".join(lines)


FRESHNESS_RUNS = ("submit", "session", "structured_streaming")


def freshness_lines(fresh: Mapping[str, Any]) -> list[str]:
    """The ``freshness`` section's rows: per run (default mode first) the measured records'
    freshness, the commits holding them, the warm-up's p99; then the ratios."""
    load = fresh["load"]
    lines = [
        f"freshness, @continuous, {load['records_per_s']:g} records/s for {load['seconds']:g} s over"
        f" {load['partitions']} partitions (warm-up {load['warmup_s']:g} s, apart):",
        f"  {'run':<21} {'p50 s':>7} {'p99 s':>7} {'max s':>7} {'commits':>8} {'duration p50 s':>15}"
        f" {'warm-up p99 s':>14}",
    ]
    for name in FRESHNESS_RUNS:
        if name in fresh:
            m, w = fresh[name]["measured"], fresh[name]["warmup"]
            lines.append(
                f"  {name:<21} {m['p50_s']:>7} {m['p99_s']:>7} {m['max_s']:>7} {m['commits']:>8}"
                f" {m['commit_duration_p50_s']:>15} {w['p99_s']:>14}"
            )
    for mode in ("session", "submit"):
        if f"ratio_p50_{mode}_vs_streaming" in fresh:
            lines.append(
                f"  {mode} vs structured streaming: p50 {fresh[f'ratio_p50_{mode}_vs_streaming']}x,"
                f" p99 {fresh[f'ratio_p99_{mode}_vs_streaming']}x"
            )
    return lines


def epoch_overhead_lines(report: Mapping[str, Any]) -> list[str]:
    """The fixed cost of one epoch from one ``epoch_overhead`` run, side by side: submit mode with
    the default settings, session mode, and the no-op 4-task floor DAG, each with its ratio to
    that floor; then submit mode against its own floor (the floor DAG plus an empty spark-submit).
    Nothing when the section did not run."""
    if "epoch_overhead_s" not in report:
        return []
    floor = float(report["floor_dag_4_noop_tasks_s"])
    rows = [
        ("submit mode, default settings", report["epoch_overhead_s"], report.get("epoch_overhead_target_s")),
        (
            "session mode",
            report.get("epoch_overhead_session_s"),
            report.get("epoch_overhead_session_target_s"),
        ),
        ("floor: no-op 4-task DAG", floor, None),
    ]
    lines = ["fixed cost of one 1-record epoch under the scheduler (one run):"]
    for name, seconds, target in rows:
        if seconds is None:
            continue
        bound = f"  (target <= {float(target):g} s)" if target is not None else ""
        lines.append(
            f"  {name:<30} {float(seconds):>6.2f} s {float(seconds) / floor:>6.2f}x the floor DAG{bound}"
        )
    lines.append(
        f"  submit mode vs the floor DAG + an empty spark-submit ({report['floor_s']} s):"
        f" {report['ratio_overhead_vs_floor']}x"
    )
    return lines
