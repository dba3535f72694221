"""Run this project's DAGs through real Airflow (``airflow dags test``) on the local stack.

Used by the end-to-end tests and the fault suite (the demo itself triggers runs on the
local stack's Airflow scheduler: :mod:`eo_devtools.demo.scheduled_runs`). Airflow keeps
its SQLite metadata DB under ``<home>`` unless ``extra_env`` points it elsewhere
(``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN``); connections reach it only as
``AIRFLOW_CONN_*`` variables. Airflow runs with this interpreter, and this
interpreter's ``bin`` directory comes first on PATH, so tasks find the same
environment's ``spark-submit`` even when the virtualenv is not activated.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO_DAGS_DIR = Path(__file__).resolve().parents[3] / "dags"
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
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        self.home = home
        bin_dir = str(Path(sys.executable).parent)
        path = {**os.environ, **conn_env}.get("PATH", "")
        self.env = {
            **os.environ,
            **conn_env,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "PATH": os.pathsep.join(p for p in (bin_dir, path) if p),
        }
        if pipelines_file is not None:
            self.env["EO_PIPELINES_FILE"] = str(pipelines_file)
        self.env.update(extra_env or {})

    def migrate(self) -> None:
        """Create or upgrade the metadata DB (quick when it is current). Raises on failure."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._airflow(["db", "migrate"], check=True)

    def reserialize(self) -> None:
        """Parse the DAG folder and write every DAG to the metadata DB. Raises on failure.

        Concurrent ``airflow dags test`` processes of a DAG the DB has never seen both
        insert it and one dies on the unique key; reserializing first avoids that."""
        self._airflow(["dags", "reserialize"], check=True)

    def run(self, dag_id: str, conf: Mapping[str, object] | None = None) -> DagRunOutcome:
        """Run one DAG run to its end; the outcome says success or failed (never raises for that)."""
        result = self._airflow(_test_args(dag_id, conf, None), check=False)
        return _outcome(dag_id, result.returncode, result.stdout)

    def start(
        self,
        dag_id: str,
        log_path: Path,
        *,
        logical_date: str | None = None,
        conf: Mapping[str, object] | None = None,
    ) -> DagTestProcess:
        """Start ``airflow dags test`` in the background (own session), output to ``log_path``.

        ``logical_date`` (ISO 8601) must differ between runs of one DAG that overlap."""
        args = _test_args(dag_id, conf, logical_date)
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "airflow", *args],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return DagTestProcess(dag_id, proc, log_path)

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


@dataclass
class DagTestProcess:
    """A background ``airflow dags test`` (see :meth:`AirflowRunner.start`)."""

    dag_id: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def wait(self, timeout: float) -> DagRunOutcome:
        """Wait for the run's end (``timeout``: the session is SIGKILLed and this raises);
        raises ``RuntimeError`` when the process finished no DAG run."""
        try:
            returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(
                f"airflow dags test {self.dag_id} still running after {timeout}s:\n{self.log()[-3000:]}"
            ) from None
        return _outcome(self.dag_id, returncode, self.log())

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole session (Airflow and the processes its tasks started)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def _test_args(dag_id: str, conf: Mapping[str, object] | None, logical_date: str | None) -> list[str]:
    args = ["dags", "test", dag_id]
    if logical_date:
        args.append(logical_date)
    if conf:
        args += ["-c", json.dumps(conf)]
    return args


def _outcome(dag_id: str, returncode: int, log: str) -> DagRunOutcome:
    matches = list(FINISHED_RE.finditer(log))
    if not matches:
        raise RuntimeError(
            f"airflow dags test {dag_id} did not finish a run (exit {returncode}):\n{log[-3000:]}"
        )
    last = matches[-1]
    return DagRunOutcome(last["dag"], last["run"], last["state"], log)
