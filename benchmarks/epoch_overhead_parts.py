"""The parts of one Airflow run's time, and the empty ``spark-submit`` floor (benchmark helpers).

:func:`run_parts` turns a DAG run and its task instances (REST API v2 answers) and the
run's task log folder into ``{"total_s", "parts"}``: per task the scheduling gap (upstream
end, or run start, -> queued -> started) and its duration, and for a ``write`` task the
driver's timeline read from its log (Airflow stamps every line of the spark-submit
output as it arrives); a session-mode ``write`` is marked ``session_write`` instead.
:func:`spark_submit_floor` times a trivial PySpark app.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from eo_devtools.stack.process import group_members

# Marks in the write task's log, in the order they happen: (part name, text of the line).
WRITE_MARKS: tuple[tuple[str, str], ...] = (
    ("submit", "Spark-Submit cmd"),
    ("driver_python_up", "driver up"),
    ("epoch_checked", "writing ranges="),
    ("spark_context_init", "Running Spark version"),
    ("job_started", "Starting job:"),
    ("job_finished", "finished: collect"),
    ("voted", "voted WRITTEN"),
    ("spark_context_stopped", "Successfully stopped SparkContext"),  # the JVM's shutdown hook
)
SESSION_WRITE_MARK = "session write tag="
"""What a session-mode write task logs (``spark/session/session_write.py``): no spark-submit runs."""
PYTHON_TIMES = re.compile(
    r"Times: total = (?P<total>\d+), boot = (?P<boot>-?\d+), init = (?P<init>\d+), finish = (?P<finish>\d+)"
)
TRIVIAL_APP = """
import time, sys
t0 = time.time()
if "--installed-pyspark" in sys.argv:
    from airflow_provider_eo.spark import pyspark_startup
    pyspark_startup.prefer_installed_pyspark()
    pyspark_startup.skip_pyspark_testing_import()
from pyspark import SparkConf, SparkContext
sc = SparkContext.getOrCreate(SparkConf().setAppName("eo-bench-empty").set("spark.ui.enabled", "false"))
t1 = time.time()
assert sc.parallelize([1], 1).map(lambda x: x + 1).collect() == [2]
t2 = time.time()
sc.stop()
print("EO_FLOOR", t0, t1, t2, time.time(), file=sys.stderr)
"""


def _ts(value: str | None) -> float | None:
    return datetime.fromisoformat(value).timestamp() if value else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _log_lines(folder: Path, task_id: str) -> list[tuple[float, str]]:
    """(timestamp, text) of every line of the task's last attempt's log."""
    attempts = sorted((folder / f"task_id={task_id}").glob("attempt=*.log"))
    if not attempts:
        return []
    lines: list[tuple[float, str]] = []
    for raw in attempts[-1].read_text(errors="replace").splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        stamp = _ts(record.get("timestamp"))
        if stamp is not None:
            lines.append((stamp, str(record.get("event", ""))))
    return lines


def write_timeline(lines: list[tuple[float, str]], start: float, end: float) -> dict[str, float | None]:
    """Seconds between consecutive marks of :data:`WRITE_MARKS` (task start -> first mark ->
    ... -> task end); a missing mark gives None and folds into the next part."""
    points: list[tuple[str, float | None]] = [("task_start", start)]
    for name, text in WRITE_MARKS:
        points.append((name, next((t for t, line in lines if text in line), None)))
    points.append(("task_end", end))
    parts: dict[str, float | None] = {}
    last_name, last_t = points[0]
    for name, t in points[1:]:
        parts[f"{last_name}->{name}"] = None if t is None else _rounded(t - float(last_t or start))
        if t is not None:
            last_name, last_t = name, t
        else:
            last_name = f"{last_name}..{name}"
    return parts


def task_phases(lines: list[tuple[float, str]], start: float, end: float) -> dict[str, float | None]:
    """A task's start-up (to the end of its log's "Pre Execute" group: DAG file parse, Task SDK
    handshakes), its ``execute`` (for the ledger tasks: ledger and broker calls) and its
    finish (XCom push, state update); None when the log lacks the groups."""
    opened = next((t for t, line in lines if line == "::group::Pre Execute"), None)
    executing = next(
        (t for t, line in lines if opened is not None and t >= opened and line == "::endgroup::"), None
    )
    finishing = next((t for t, line in lines if line == "::group::Post Execute"), None)
    if executing is None or finishing is None:
        return {"startup_s": None, "execute_s": None, "finish_s": None}
    return {
        "startup_s": _rounded(executing - start),
        "execute_s": _rounded(finishing - executing),
        "finish_s": _rounded(end - finishing),
    }


def python_worker_times(lines: list[tuple[float, str]]) -> dict[str, float]:
    """Spark's own account of its Python tasks (``PythonRunner: Times: total = ..., boot = ...,
    init = ..., finish = ...`` in ms), summed over tasks, in seconds: ``boot`` starts the
    worker, ``init`` unpickles the task function (its imports), ``finish`` runs it (records,
    client connections)."""
    sums = {"worker_boot_s": 0.0, "worker_init_s": 0.0, "task_run_s": 0.0}
    for _, line in lines:
        match = PYTHON_TIMES.search(line)
        if match:
            sums["worker_boot_s"] += int(match["boot"]) / 1000
            sums["worker_init_s"] += int(match["init"]) / 1000
            sums["task_run_s"] += int(match["finish"]) / 1000
    return {k: round(v, 3) for k, v in sums.items()}


def summary(parts: dict[str, Any]) -> dict[str, float]:
    """The run's time in the issue's categories (seconds; they add up to the run's total
    up to rounding and the short waits between consecutive log lines). A session-mode write
    (no spark-submit, no driver timeline) counts its ``execute`` as ``session_job_s``: the
    Spark Connect session, the job on the server and the vote, all from the Airflow task."""
    tasks = {k: v for k, v in parts.items() if isinstance(v, dict)}
    session = {k: t for k, t in tasks.items() if t.get("session_write")}
    inside = tasks.get("write", {}).get("inside", {})
    workers = tasks.get("write", {}).get("python_workers", {})

    def add(*values: float | None) -> float:
        return round(sum(v or 0.0 for v in values), 3)

    spark_job = inside.get("job_started->job_finished")
    worker_start = add(workers.get("worker_boot_s"), workers.get("worker_init_s"))
    return {
        "scheduling_s": add(
            *(t["upstream_end_to_queued_s"] for t in tasks.values()),
            *(t["queued_to_start_s"] for t in tasks.values()),
        ),
        "task_starts_and_ends_s": add(
            *(t.get("startup_s") for t in tasks.values()),
            *(t.get("finish_s") for t in tasks.values() if "inside" not in t),
            inside.get("spark_context_stopped->task_end"),
        ),
        "ledger_and_broker_s": add(
            *(t.get("execute_s") for k, t in tasks.items() if "inside" not in t and k not in session),
            inside.get("driver_python_up->epoch_checked"),
            inside.get("job_finished->voted"),
        ),
        # the write task's start-up is counted with the task starts
        "spark_submit_jvm_and_driver_python_s": round(
            add(inside.get("task_start->submit"), inside.get("submit->driver_python_up"))
            - (add(tasks["write"].get("startup_s")) if inside else 0.0),
            3,
        ),
        "spark_context_start_and_stop_s": add(
            inside.get("epoch_checked->spark_context_init"),
            inside.get("spark_context_init->job_started"),
            inside.get("voted->spark_context_stopped"),
        ),
        "spark_task_startup_s": worker_start,
        "spark_task_records_and_rest_s": round(float(spark_job or 0.0) - worker_start, 3),
        "session_job_s": add(*(t.get("execute_s") for t in session.values())),
    }


def run_parts(run: dict[str, Any], tis: list[dict[str, Any]], log_folder: Path) -> dict[str, Any]:
    """``{"total_s", "parts"}`` of a finished run (see the module doc)."""
    run_start = _ts(run["start_date"])
    assert run_start is not None
    ordered = sorted(tis, key=lambda ti: _ts(ti["start_date"]) or 0.0)
    parts: dict[str, Any] = {}
    previous_end = run_start
    for ti in ordered:
        queued, started, ended = _ts(ti.get("queued_when")), _ts(ti["start_date"]), _ts(ti["end_date"])
        assert started is not None and ended is not None
        entry: dict[str, Any] = {
            "upstream_end_to_queued_s": _rounded(None if queued is None else queued - previous_end),
            "queued_to_start_s": _rounded(None if queued is None else started - queued),
            "duration_s": _rounded(ended - started),
        }
        lines = _log_lines(log_folder, ti["task_id"])
        entry.update(task_phases(lines, started, ended))
        if any(WRITE_MARKS[0][1] in line for _, line in lines):  # a spark-submit task
            entry["inside"] = write_timeline(lines, started, ended)
            entry["python_workers"] = python_worker_times(lines)
        elif any(SESSION_WRITE_MARK in line for _, line in lines):  # a session-mode write
            entry["session_write"] = True
        parts[ti["task_id"]] = entry
        previous_end = ended
    last_end = max(_ts(ti["end_date"]) or 0.0 for ti in tis)
    sched = sum((e["upstream_end_to_queued_s"] or 0) + (e["queued_to_start_s"] or 0) for e in parts.values())
    parts["scheduling_total_s"] = round(sched, 3)
    parts["task_durations_total_s"] = round(
        sum(e["duration_s"] for e in parts.values() if isinstance(e, dict)), 3
    )
    parts["summary"] = summary(parts)
    return {"total_s": round(last_end - run_start, 3), "parts": parts}


def group_cpu_s(pgid: int) -> float:
    """CPU seconds (user + system) used so far by the live processes of group ``pgid``."""
    ticks = 0
    for pid in group_members(pgid):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def idle_cpu_share(pgid: int, seconds: float) -> float:
    """Share of one core that process group ``pgid`` uses over ``seconds`` of waiting."""
    before = group_cpu_s(pgid)
    time.sleep(seconds)
    return round((group_cpu_s(pgid) - before) / seconds, 3)


def spark_submit_floor(
    args: Sequence[str] = (), env: Mapping[str, str] | None = None, *, installed_pyspark: bool = False
) -> dict[str, float]:
    """Wall time of ``spark-submit`` of a trivial app (SparkContext, one task, stop), and its parts;
    ``args``: extra spark-submit options, ``env``: extra environment; ``installed_pyspark``: the
    app's driver imports PySpark as the write application does (``prefer_installed_pyspark``)."""
    with tempfile.TemporaryDirectory(prefix="eo-bench-floor-") as tmp:
        app = Path(tmp) / "empty_app.py"
        app.write_text(TRIVIAL_APP)
        submit = Path(sys.executable).with_name("spark-submit")
        full_env = {**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})}
        started = time.time()
        done = subprocess.run(
            [
                str(submit),
                "--master",
                "local[*]",
                *args,
                str(app),
                *(["--installed-pyspark"] if installed_pyspark else []),
            ],
            env=full_env,
            capture_output=True,
            text=True,
            check=True,
        )
        ended = time.time()
    # PythonRunner passes the app's stderr on through the JVM's stdout
    line = next(x for x in (done.stdout + done.stderr).splitlines() if x.startswith("EO_FLOOR"))
    t0, t1, t2 = (float(x) for x in line.split()[1:4])
    return {
        "wall_s": round(ended - started, 3),
        "submit_to_python_app_s": round(t0 - started, 3),
        "spark_context_start_s": round(t1 - t0, 3),
        "one_task_s": round(t2 - t1, 3),
        "stop_and_exit_s": round(ended - t2, 3),
    }
