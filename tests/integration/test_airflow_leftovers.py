"""A killed scheduler's leftovers: ``LocalAirflow.up`` and ``down`` leave none of them running.

Airflow's LocalExecutor workers stay in the scheduler's process group and session and
rename themselves (``setproctitle`` erases the environment marker ``down`` looked for);
task processes run in process groups of their own in the same session. After a
``kill -9`` of the scheduler, ``up`` (before starting a new scheduler) and ``down`` SIGKILL
what is left in the dead service's session (:meth:`LocalAirflow.leftovers`).

The first test is cheap (a shell pretends to be a scheduler); the second runs a real
Airflow of its own on the session's stack (its ``down`` must leave nothing, so it cannot be
the session's ``airflow_server``, which the tests after it use). Both run in every run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eo_devtools.stack.airflow import LocalAirflow
from eo_devtools.stack.airflow_config import AirflowConfig
from eo_devtools.stack.airflow_services import SERVICE_MARKER, AirflowScheduler
from eo_devtools.stack.process import cmdline, group_members, has_env, is_running, session_members
from tests.airflow_server import running_airflow_server
from tests.conftest import StackInfo

pytestmark = [pytest.mark.integration, pytest.mark.airflow]


def _wait(what: str, condition: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what}: not after {timeout}s"
        time.sleep(0.05)


def _config(base: Path) -> AirflowConfig:
    return AirflowConfig(
        state_dir=base,
        home=base / "airflow",
        port=1,
        database="unused",
        postgres_dsn="postgresql://unused@127.0.0.1:1/unused",
        conn_env={},
        dags_folder=base / "dags",
    )


def stack_processes(state_dir: Path, home: Path) -> list[tuple[int, str]]:
    """(pid, command line) of every live process (this one aside) whose command line or
    environment names ``state_dir``, or that carries the Airflow services' marker for ``home``."""
    found = []
    needle = str(state_dir).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        try:
            argv = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if (needle in argv or needle in environ or has_env(pid, SERVICE_MARKER, str(home))) and is_running(
            pid
        ):
            found.append((pid, argv.replace(b"\0", b" ").decode(errors="replace")[:200]))
    return found


def test_leftovers_of_a_dead_scheduler_are_its_session_minus_strangers(tmp_path: Path) -> None:
    """A fake scheduler (a shell, its own session) starts a renamed worker in its group and a
    task in a group of its own, then is SIGKILLed: both are leftovers; a process of the same
    session (in a group of its own) that is neither renamed to ``airflow ...`` nor marked is
    not. ``down`` kills both."""
    config = _config(tmp_path)
    service = AirflowScheduler(config)
    service.pid_path.parent.mkdir(parents=True)
    sleeper = "import os, time; os.setpgid(0, 0); time.sleep({})"
    script = (
        f"env -u {SERVICE_MARKER} bash -c 'exec -a \"airflow worker -- LocalExecutor: <idle>\" sleep 300' & "
        f"{sys.executable} -c '{sleeper.format(300)}' & "
        f"env -u {SERVICE_MARKER} {sys.executable} -c '{sleeper.format(301)}' & wait"
    )
    env = {**os.environ, SERVICE_MARKER: str(config.home)}
    leader = subprocess.Popen(["bash", "-c", script], env=env, start_new_session=True)
    try:
        service.pid_path.write_text(f"{leader.pid}\n")

        def children() -> dict[str, int]:
            found = {}
            for pid in set(session_members(leader.pid)) - {leader.pid}:
                if cmdline(pid).startswith("airflow worker"):
                    found["worker"] = pid
                elif "sleep(301)" in cmdline(pid) and os.getpgid(pid) == pid:
                    found["stranger"] = pid
                elif "sleep(300)" in cmdline(pid) and os.getpgid(pid) == pid:
                    found["task"] = pid
            return found

        _wait("three children", lambda: len(children()) == 3)
        airflow = LocalAirflow(config)
        assert airflow.leftovers(service) == []  # the scheduler runs: nothing is left over
        worker, task, stranger = children()["worker"], children()["task"], children()["stranger"]
        assert os.getpgid(worker) == leader.pid and not has_env(worker, SERVICE_MARKER, str(config.home))

        os.kill(leader.pid, signal.SIGKILL)
        leader.wait()
        assert sorted(airflow.leftovers(service)) == sorted([worker, task])

        airflow.down()
        assert session_members(leader.pid) == [stranger]
        assert group_members(task) == []
    finally:
        for pid in session_members(leader.pid):
            os.kill(pid, signal.SIGKILL)


def test_scheduler_killed_then_up_and_down_leave_nothing(stack: StackInfo) -> None:
    """A real Airflow (LocalExecutor): ``kill -9`` of the scheduler leaves its idle workers;
    ``up`` kills them before it starts a new scheduler; the scheduler killed again, ``down``
    leaves no process of this Airflow (a /proc scan for its state dir and marker)."""
    with running_airflow_server(stack) as server:
        airflow = server.airflow
        state_dir = airflow.config.state_dir
        (scheduler,) = [s for s in airflow.services if s.name == "airflow-scheduler"]
        for attempt in ("up", "down"):
            pid = int(scheduler.pid_path.read_text())
            _wait("the LocalExecutor workers", lambda pid=pid: len(group_members(pid)) > 1, 120)  # type: ignore[misc]
            os.kill(pid, signal.SIGKILL)
            _wait("the scheduler gone", lambda pid=pid: not is_running(pid))  # type: ignore[misc]
            # read once the scheduler is dead: before, it may still be starting workers
            workers = sorted(set(session_members(pid)) - {pid})
            assert workers  # the workers outlive the scheduler, and are all its leftovers
            assert sorted(airflow.leftovers(scheduler)) == workers
            if attempt == "up":
                airflow.up()
                assert [w for w in workers if is_running(w)] == []
                assert int(scheduler.pid_path.read_text()) != pid and airflow.is_up()
            else:
                airflow.down()
                assert stack_processes(state_dir, airflow.config.home) == []
