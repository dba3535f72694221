"""Fault kinds of YARN cluster deploy mode (the randomized mode's and tests/faults/test_yarn_faults.py's).

Each kind reserves nothing itself: it gets a RESERVED epoch, writes it through the write
step in a child process (:func:`~tests.faults.yarn_writes.start_yarn_write`) with a fault
point armed in the containers, strikes, and returns a :class:`YarnStrike` (what happened);
the caller then runs the next stream run (recover first) and verifies.

* ``yarn.airflow_worker_kill9_zombie``: the driver holds before its vote
  (``spark.after_last_batch``, every cell written); the write step's process tree (the
  Airflow side, spark-submit's already returned) is SIGKILLed, so no ``on_kill`` runs and
  the application runs on, a zombie; recovery aborts the epoch; then the zombie is released:
  its vote must be fenced (epoch stays ABORTED, the driver logs ``vote fenced out``).
* ``yarn.am_kill9_mid_write``: the tasks hold after their first segment; the
  ApplicationMaster's JVM is SIGKILLed (the driver with it) and the tasks released. With
  ``spark.yarn.maxAppAttempts=2`` YARN starts attempt 2, a second driver of the same epoch
  and token, which rewrites the epoch and votes: the step succeeds; with the provider's
  pin of 1 the application FAILS and the step fails (epoch RESERVED).
* ``yarn.nodemanager_kill9_mid_write``: the tasks hold after their first segment; the
  NodeManager's JVM is SIGKILLed, started again (same node id) and the tasks released.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_eo.ledger.model.states import EpochState
from eo_devtools.stack.ports import PortBusyError
from tests.faults.harness import Case
from tests.faults.yarn_apps import YarnApps
from tests.faults.yarn_writes import points_conf, start_yarn_write

#: Set to 1 to run the randomized mode on YARN cluster mode (tests/faults/test_randomized.py).
YARN_ENV = "EO_FAULT_RANDOM_YARN"
YARN_FAULTS = (
    "yarn.airflow_worker_kill9_zombie",
    "yarn.am_kill9_mid_write",
    "yarn.nodemanager_kill9_mid_write",
)
DRIVER_HOLD = "spark.after_last_batch"
TASK_HOLD = "spark.task.after_segment"
#: How long a write step in YARN may take (two YARN applications, an NM restart).
STEP_TIMEOUT_S = 600


@dataclass
class YarnStrike:
    """One struck write: the epoch, the step's exit status (None: SIGKILLed), its output,
    the applications of the epoch as the RM ended them (id -> (state, final status,
    attempts)), the epoch's state afterwards, the containers' logs, and how many processes
    of its applications still ran once the RM had ended them (SIGKILLed then)."""

    epoch_id: int
    returncode: int | None
    output: str
    apps: dict[str, tuple[str, str, int]]
    state: EpochState
    logs: str
    leftovers: int

    def describe(self) -> str:
        apps = "; ".join(f"{i} {s}/{f} {n} attempt(s)" for i, (s, f, n) in self.apps.items())
        step = "step SIGKILLed" if self.returncode is None else f"step exit {self.returncode}"
        left = f", {self.leftovers} process(es) left running" if self.leftovers else ""
        return f"{step}, {apps}, epoch {self.state.value}{left}"


def on_yarn() -> bool:
    """Whether the randomized mode writes in YARN cluster mode (``EO_FAULT_RANDOM_YARN=1``)."""
    return os.environ.get(YARN_ENV) == "1"


def yarn_apps(case: Case) -> YarnApps:
    return YarnApps(case.stack.local.yarn_webapp_url, case.stack.state_dir)


def inject_yarn_fault(
    case: Case, kind: str, rng: random.Random, tag: str, workdir: Path, *, max_app_attempts: int | None = None
) -> YarnStrike:
    """Recover, reserve and write one epoch with ``kind`` (module doc); ``max_app_attempts``
    sets ``spark.yarn.maxAppAttempts`` for this submission (None: the pipeline's)."""
    case.recover(tag)
    summary = case.reserve(tag)
    assert summary is not None, "each round produces new records"
    epoch_id, token = int(summary["epoch_id"]), str(summary["fencing_token"])
    release = workdir / f"release-{tag}"
    hold = DRIVER_HOLD if kind == "yarn.airflow_worker_kill9_zombie" else TASK_HOLD
    conf = points_conf(f"{hold}:hang", release)
    if max_app_attempts is not None:
        conf["spark.yarn.maxAppAttempts"] = str(max_app_attempts)
    step = start_yarn_write(case, epoch_id, token, tag, conf)
    apps = yarn_apps(case)
    app_id = str(apps.app(case.name, epoch_id)["id"])
    apps.wait_for_log(app_id, f"EO fault point {hold}: hanging")
    if kind == "yarn.airflow_worker_kill9_zombie":
        os.killpg(step.proc.pid, signal.SIGKILL)  # the task process and whatever it started
        step.proc.wait()
        assert apps.report(app_id)["state"] == "RUNNING"  # the driver runs on: a zombie
        case.recover(f"{tag}-recover")  # the run is unknown to Airflow: its epoch is aborted
        assert case.epoch(epoch_id).state is EpochState.ABORTED
        release.touch()
        apps.wait_ended(app_id)
        returncode: int | None = None
        output = step.output()
    else:
        if kind == "yarn.am_kill9_mid_write":
            os.kill(apps.am_pid(app_id), signal.SIGKILL)
        elif kind == "yarn.nodemanager_kill9_mid_write":
            nodemanager = case.stack.local.yarn_nodemanager_pid
            assert nodemanager is not None, "the NodeManager is not running"
            os.kill(nodemanager, signal.SIGKILL)
            restart_nodemanager(case, nodemanager)
        else:
            raise AssertionError(f"unknown YARN fault kind {kind}")
        release.touch()
        result = step.result(STEP_TIMEOUT_S)
        returncode, output = result.returncode, result.output
        for app in apps.apps(case.name, epoch_id):
            apps.wait_ended(str(app["id"]))
    ended = {
        str(a["id"]): (str(a["state"]), str(a["finalStatus"]), len(apps.attempts(str(a["id"]))))
        for a in apps.apps(case.name, epoch_id)
    }
    logs = "".join(apps.logs(i) for i in ended)
    leftovers = sum(len(apps.kill_leftovers(i)) for i in ended)  # containers a killed NM left
    return YarnStrike(epoch_id, returncode, output, ended, case.epoch(epoch_id).state, logs, leftovers)


def restart_nodemanager(case: Case, killed: int, timeout: float = 60) -> int:
    """Start the NodeManager ``killed`` (its pid) again (same ports, same node id); its pid.

    A JVM killed with ``kill -9`` takes a moment to exit on a loaded machine: until it has,
    the stack counts it as running (and would start nothing) and its ports stay taken. So
    first wait until it is gone (or a zombie, reaped when it is this process's child), then
    retry the start while a port is busy; ``timeout`` seconds at most for each."""
    deadline = time.monotonic() + timeout
    while not _exited(killed):
        assert time.monotonic() < deadline, f"NodeManager {killed} still running {timeout:g} s after kill -9"
        time.sleep(0.2)
    deadline = time.monotonic() + timeout
    while True:
        try:
            return case.stack.local.yarn_start_nodemanager()
        except PortBusyError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie: reaped if it is this process's child)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def check_strike(kind: str, strike: YarnStrike) -> str:
    """The invariants every strike of ``kind`` keeps, whatever YARN did; what was observed.

    The zombie's vote is refused (epoch ABORTED); a step that succeeded left the epoch
    WRITTEN; a failed step left it RESERVED, or WRITTEN when a driver voted before its
    application was declared failed (the next run's recovery commits it)."""
    if kind == "yarn.airflow_worker_kill9_zombie":
        assert strike.state is EpochState.ABORTED, strike.describe()
        assert "vote fenced out" in strike.logs, strike.logs[-3000:]
    elif strike.returncode == 0:
        assert strike.state is EpochState.WRITTEN, strike.describe()
    else:
        assert strike.state in (EpochState.RESERVED, EpochState.WRITTEN), strike.describe()
    return strike.describe()
