"""Run this project's DAGs through real Airflow (``airflow dags test``) on the local stack.

Used by the demo and by the end-to-end tests. Airflow keeps its SQLite metadata
DB under ``<home>``; connections reach it only as ``AIRFLOW_CONN_*`` variables.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO_DAGS_DIR = Path(__file__).resolve().parents[2] / "dags"
FINISHED_RE = re.compile(
    r"DagRun Finished: dag_id=(?P<dag>[^,]+),.*?run_id=(?P<run>[^,]+),.*?state=(?P<state>\w+)"
)


@dataclass(frozen=True)
class DagRunOutcome:
    """What one ``airflow dags test`` run ended with; ``log`` is its combined output."""

    dag_id: str
    run_id: str
    state: str
    log: str


class AirflowRunner:
    """Runs DAGs of ``dags_folder`` in a private AIRFLOW_HOME with the given connections."""

    def __init__(
        self,
        home: Path,
        conn_env: Mapping[str, str],
        *,
        dags_folder: Path = REPO_DAGS_DIR,
        pipelines_file: Path | None = None,
    ) -> None:
        self.home = home
        self.env = {
            **os.environ,
            **conn_env,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        }
        if pipelines_file is not None:
            self.env["EO_PIPELINES_FILE"] = str(pipelines_file)

    def migrate(self) -> None:
        """Create or upgrade the metadata DB (quick when it is current). Raises on failure."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._airflow(["db", "migrate"], check=True)

    def run(self, dag_id: str, conf: Mapping[str, object] | None = None) -> DagRunOutcome:
        """Run one DAG run to its end; the outcome says success or failed (never raises for that)."""
        args = ["dags", "test", dag_id]
        if conf:
            args += ["-c", json.dumps(conf)]
        result = self._airflow(args, check=False)
        log = result.stdout
        matches = list(FINISHED_RE.finditer(log))
        if not matches:
            raise RuntimeError(
                f"airflow dags test {dag_id} did not finish a run (exit {result.returncode}):\n{log[-3000:]}"
            )
        last = matches[-1]
        return DagRunOutcome(last["dag"], last["run"], last["state"], log)

    def _airflow(self, args: list[str], *, check: bool) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"airflow {' '.join(args)} failed (exit {result.returncode}):\n{result.stdout[-3000:]}"
            )
        return result
