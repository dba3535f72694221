"""One measured ``spark-submit``: wall time, CPU by component, peak memory, marked output lines.

Every Spark run of the suite (the write step, Spark's own Kafka source as its peer) goes
through :func:`measured_submit`, so their figures are taken the same way: the clock runs
from spark-submit's start to its exit (JVM start included), the process tree is sampled
by :class:`benchmarks.process_meter.ProcessMeter` (CPU by :func:`spark_process_kind`), and
the stack's servers by :class:`benchmarks.cpu_components.ServerMeter`. ``spark-submit`` is
the one next to this interpreter (the venv's), so nothing depends on ``PATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.cpu_components import ServerMeter, per_record_us, spark_process_kind
from benchmarks.process_meter import ProcessMeter
from eo_devtools.stack.stack import LocalStack

TAIL_BYTES = 4000


def spark_submit_path() -> str:
    """The ``spark-submit`` installed with this interpreter's pyspark."""
    return str(Path(sys.executable).parent / "spark-submit")


@dataclass(frozen=True)
class SubmitRun:
    """What one spark-submit cost: ``client_cpu_s`` is its process tree's, split in
    ``client_cpu_s_by_kind``; ``server_cpu_s`` is each stack server's. ``marked`` holds the
    output lines that start with the marker asked for; ``tail`` the output's last bytes."""

    wall_s: float
    client_cpu_s_by_kind: dict[str, float]
    server_cpu_s: dict[str, float]
    peak_rss_bytes: int
    marked: list[str]
    tail: str

    @property
    def client_cpu_s(self) -> float:
        """CPU seconds of the whole spark-submit tree."""
        return sum(self.client_cpu_s_by_kind.values())

    def figures(self, records: int, megabytes: float) -> dict[str, Any]:
        """:func:`figures` of the run, plus ``peak_rss_mb`` and ``components_us_per_record``
        (:func:`benchmarks.cpu_components.per_record_us` of the tree's kinds and the servers)."""
        result = figures(records, megabytes, self.wall_s, self.client_cpu_s, sum(self.server_cpu_s.values()))
        result["peak_rss_mb"] = round(self.peak_rss_bytes / 2**20, 1)
        result["components_us_per_record"] = per_record_us(
            {**self.client_cpu_s_by_kind, **self.server_cpu_s}, records
        )
        return result


def figures(
    records: int, megabytes: float, seconds: float, client_cpu_s: float, server_cpu_s: float
) -> dict[str, Any]:
    """records/s, MB/s and CPU seconds per million records of one run."""
    return {
        "records": records,
        "wall_s": round(seconds, 2),
        "records_per_s": round(records / seconds),
        "mb_per_s": round(megabytes / seconds, 2),
        "client_cpu_s_per_million": round(client_cpu_s * 1e6 / records, 1),
        "server_cpu_s_per_million": round(server_cpu_s * 1e6 / records, 1),
    }


def submit_env(stack: LocalStack) -> dict[str, str]:
    """This process's environment, the stack's ``AIRFLOW_CONN_*``, Spark's Python this one and
    the venv first on ``PATH`` (spark-submit finds SPARK_HOME through the python there)."""
    env = {
        **os.environ,
        **stack.conn_env(),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def measured_submit(stack: LocalStack, argv: Sequence[str], label: str, marker: str = "") -> SubmitRun:
    """Run ``spark-submit argv`` (:func:`submit_env`) and measure it; raises RuntimeError with
    the output's tail when it exits non-zero. Lines starting with ``marker`` are kept (none
    when it is empty); the rest of the output only as the tail."""
    servers = ServerMeter(stack)
    marked: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            [spark_submit_path(), *argv], env=submit_env(stack), stdout=output, stderr=subprocess.STDOUT
        )
        meter = ProcessMeter(process.pid, kind_of=spark_process_kind).start()
        code = process.wait()
        meter.stop()
        wall = time.monotonic() - started
        server_cpu = servers.seconds()
        output.seek(0)
        for raw in output:
            if marker and raw.startswith(marker.encode()):
                marked.append(raw.decode("utf-8", "replace").rstrip("\n"))
        output.seek(max(0, output.tell() - TAIL_BYTES))
        tail = output.read().decode("utf-8", "replace")
    if code != 0:
        raise RuntimeError(f"{label}: spark-submit exited {code}:\n{tail}")
    return SubmitRun(wall, meter.cpu_seconds_by_kind, server_cpu, meter.peak_rss_bytes, marked, tail)
