"""The README's main command as a user meets it: ``python -m eo_devtools.demo``, timed.

``run()`` starts the demo with its default settings on a fresh state directory (its own
stack and Airflow, as ``scripts/demo.sh`` does after ``scripts/setup.sh``), then a second
time on the same, running stack (a rerun: 6,000 more events per pipeline), and stops that
stack. Per run: the wall time from the process's start to its exit, its exit code and the
report's ``ok``. A run that fails or whose checks fail raises ``RuntimeError`` naming the
run and the tail of its output, so no figure is recorded for a broken demo.

Not measured here: ``scripts/setup.sh`` creating ``.venv`` (pip and Maven downloads, minutes
that depend on the network); tests/setup times its second run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 1_800


def _demo(state_dir: Path, label: str) -> dict[str, Any]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "eo_devtools.demo", "--state-dir", str(state_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")},
    )
    wall = time.monotonic() - started
    lines = done.stdout.splitlines()
    report = json.loads("\n".join(lines[lines.index("{") : lines.index("}") + 1])) if "{" in lines else {}
    if done.returncode != 0 or not report.get("ok"):
        raise RuntimeError(f"demo {label}: exit {done.returncode}: {(done.stdout + done.stderr)[-3000:]}")
    pipelines = {p["pipeline"]: p["records_produced"] for p in report["pipelines"]}
    print(f"demo_run: {label}: {wall:.1f} s, records per pipeline {pipelines}", flush=True)
    return {"wall_s": round(wall, 1), "exit_code": done.returncode, "records_by_pipeline": pipelines}


def run() -> dict[str, Any]:
    """``{"first": figures, "rerun": figures}`` of two demo runs on one fresh state directory."""
    state_dir = Path(tempfile.mkdtemp(prefix="eo-bench-demo-", dir="/tmp"))
    state_dir.chmod(0o755)  # PostgreSQL's OS user enters it
    try:
        return {"first": _demo(state_dir, "first run"), "rerun": _demo(state_dir, "rerun")}
    finally:
        subprocess.run(
            [sys.executable, "-m", "eo_devtools.stack.cli", "down", "--state-dir", str(state_dir)],
            cwd=REPO,
            capture_output=True,
            check=False,
            timeout=300,
        )
        shutil.rmtree(state_dir, ignore_errors=True)
