"""The fault suite's Spark Connect server: one per module, with a gate that pauses write tasks.

:class:`FaultConnectServer` runs the stack's server (:class:`SparkConnectService`, local[2])
under its own name (``spark-connect-faults``: its pid and log files beside the fault stack's)
with two differences: its workers' Python is ``connect_site/executor_boot.py``, which pauses a
task right after an HBase segment while :attr:`FaultConnectServer.gate` exists, and a longer
start-up bound (a loaded machine). :meth:`FaultConnectServer.kill9` SIGKILLs its process group
(the JVM and its Python workers); :meth:`FaultConnectServer.start` starts it again on the same
port, so the ``spark_connect`` connection does not change.

:func:`start_session_write` runs the write task (``WriteEpochOperator`` in session mode) in
a child process of its own (``tests/faults/steps.py``): the Airflow task's process, which a
test may SIGKILL without ``on_kill``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from eo_devtools.stack.ports import PortBusyError, find_free_port
from eo_devtools.stack.process import running_pid
from eo_devtools.stack.service_process import launch, stop_service, wait_healthy
from eo_devtools.stack.spark_connect import PORT_KEY, SparkConnectService, spark_connect_connection
from tests.faults.harness import REPO, Case, StepProc

BOOT = Path(__file__).with_name("connect_site") / "executor_boot.py"
GATE_ENV = "EO_FAULT_GATE_FILE"


class GatedConnectService(SparkConnectService):
    """The stack's Connect server whose Python workers start through :data:`BOOT`."""

    name = "spark-connect-faults"
    startup_timeout_s = 420.0

    def __init__(self, state_dir: Path, port: int, gate: Path) -> None:
        super().__init__(state_dir, {PORT_KEY: port})
        self.gate = gate

    @property
    def worker_python(self) -> Path:
        return self.state_dir / self.name / "python"

    def prepare(self) -> None:
        super().prepare()
        from eo_devtools.stack.spark_services import executor_python

        self.worker_python.parent.mkdir(parents=True, exist_ok=True)
        base = (
            executor_python(self.state_dir).read_text().splitlines()[-1]
        )  # PYTHONPATH=... exec python -S "$@"
        self.worker_python.write_text("#!/bin/sh\n" + base.replace('-S "$@"', f'-S {BOOT} "$@"') + "\n")
        self.worker_python.chmod(0o755)

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.update(PYSPARK_PYTHON=str(self.worker_python), **{GATE_ENV: str(self.gate)})
        return env


class FaultConnectServer:
    """One Spark Connect server for a fault module (see the module docstring)."""

    def __init__(self, state_dir: Path) -> None:
        self.gate = state_dir / "spark-connect-faults" / "gate"
        self.service = GatedConnectService(state_dir, find_free_port(), self.gate)
        #: Seconds each start took (the first and every restart).
        self.starts: list[float] = []

    @property
    def port(self) -> int:
        return self.service.port

    @property
    def connection(self) -> str:
        """The ``AIRFLOW_CONN_SPARK_CONNECT`` value naming this server."""
        return spark_connect_connection(self.port)

    def start(self) -> None:
        """Start the server and wait until it answers (the port may need a moment after a kill)."""
        started = time.monotonic()
        deadline = started + 60
        while True:
            try:
                pid = launch(self.service)
                break
            except PortBusyError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        wait_healthy(self.service, pid)
        self.starts.append(round(time.monotonic() - started, 1))

    def stop(self) -> None:
        self.open_gate()
        stop_service(self.service)

    def kill9(self) -> None:
        """SIGKILL the server's process group (JVM and Python workers); returns once it is gone."""
        pid = running_pid(self.service.pid_path)
        assert pid is not None, "the Connect server is not running"
        os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):  # our child when we started it: reap it
            os.waitpid(pid, 0)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        self.service.pid_path.unlink(missing_ok=True)

    # -- the gate ----------------------------------------------------------------
    def close_gate(self) -> None:
        """From now on every write task pauses after its next HBase segment."""
        self.gate.parent.mkdir(parents=True, exist_ok=True)
        self.paused_file.unlink(missing_ok=True)
        self.gate.touch()

    def open_gate(self) -> None:
        """Paused tasks resume; no task pauses any more."""
        self.gate.unlink(missing_ok=True)

    @property
    def paused_file(self) -> Path:
        return self.gate.with_name("gate.paused")

    def wait_paused(self, timeout: float = 240) -> list[int]:
        """The pids of the Python workers paused at the gate, once at least one is."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.paused_file.exists():
                pids = [int(line) for line in self.paused_file.read_text().split()]
                if pids:
                    return pids
            time.sleep(0.2)
        raise AssertionError(f"no write task paused at the gate within {timeout}s ({self.service.log_path})")


def start_session_write(
    case: Case, server: FaultConnectServer, epoch_id: int, token: str, run_id: str, try_number: int
) -> StepProc:
    """Try ``try_number`` of the write task of ``epoch_id`` (session mode, on ``server``) in a
    child process of its own (process group = its pid), with the case's connections; returns
    at once."""
    argv = [sys.executable, "-m", "tests.faults.steps", "write", "--pipeline", case.name]
    argv += ["--pipelines-file", str(case.pipelines_file), "--dag-id", case.dag_id, "--run-id", run_id]
    argv += ["--epoch-id", str(epoch_id), "--fencing-token", token, "--try-number", str(try_number)]
    log_path = case.workdir / f"session-write-{epoch_id}-{try_number}-{uuid.uuid4().hex[:6]}.log"
    with log_path.open("wb") as log:
        env = {**case.env(), "AIRFLOW_CONN_SPARK_CONNECT": server.connection}
        proc = subprocess.Popen(
            argv, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    return StepProc(proc, log_path)


def session_writer(server: FaultConnectServer, timeout: float = 300) -> Callable[[Case, int, str, str], int]:
    """A :attr:`Case.writer`: try 1 of the write task on ``server``, waited for; its exit status."""

    def write(case: Case, epoch_id: int, token: str, run_id: str) -> int:
        done = start_session_write(case, server, epoch_id, token, run_id, 1).result(timeout)
        assert not done.timed_out, f"session write of epoch {epoch_id} still running after {timeout}s"
        return done.returncode

    return write
