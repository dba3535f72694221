"""The fault suite's protocol-point handler: kill or hang a process at a named protocol point.

The product calls :func:`airflow_provider_eo.protocol_points.passed` at each point, which
raises the audit event ``eo.protocol_point``. :func:`install` adds an audit hook that calls
:func:`handle` for it, which acts when ``EO_FAULT_POINTS`` names the point (comma-separated
entries ``name`` or ``name:action``):

* ``kill`` (default): SIGKILL the calling process at once (no cleanup, no ``finally``),
  as a machine or OOM-killer would;
* ``hang``: the first time the point is reached in a process, sleep up to
  ``EO_FAULT_HANG_S`` seconds (default 600), or until the file named by
  ``EO_FAULT_RELEASE_FILE`` exists, so a test can act from outside (kill the driver,
  restart a service, abort the epoch) while the process stands at a known point. It
  announces itself on stderr (``EO fault point <name>: hanging (pid N)``).

:func:`crash_env` is the environment that arms points in a child process and in whatever it
starts: ``EO_FAULT_POINTS`` and a ``PYTHONPATH`` that starts with ``points_site/``, whose
``sitecustomize`` calls :func:`install` at interpreter start-up (spark-submit's driver,
Spark's Python workers: Spark merges ``PYTHONPATH`` into their path). :func:`listening`
routes the points of this process to a function, for tests that act in-process.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow_provider_eo.protocol_points import AUDIT_EVENT

FAULT_POINTS_ENV = "EO_FAULT_POINTS"
FAULT_HANG_ENV = "EO_FAULT_HANG_S"
FAULT_RELEASE_ENV = "EO_FAULT_RELEASE_FILE"
REPO = Path(__file__).resolve().parents[2]
#: The folder whose ``sitecustomize`` arms a process at start-up.
POINTS_SITE = Path(__file__).with_name("points_site")
_hung: set[str] = set()
_installed: list[bool] = []
_listeners: list[Callable[[str], None]] = []


def crash_env(faults: str) -> dict[str, str]:
    """Variables that arm ``faults`` (the ``EO_FAULT_POINTS`` value) in a child process tree:
    the armed points and a ``PYTHONPATH`` that starts with :data:`POINTS_SITE` and the
    repository."""
    parts = (str(POINTS_SITE), str(REPO), os.environ.get("PYTHONPATH", ""))
    return {FAULT_POINTS_ENV: faults, "PYTHONPATH": os.pathsep.join(p for p in parts if p)}


def install() -> None:
    """Add the audit hook that hands each protocol point of this process to :func:`handle`
    and to the :func:`listening` functions (once per process: audit hooks stay for good)."""
    if not _installed:
        sys.addaudithook(_on_audit_event)
        _installed.append(True)


def _on_audit_event(event: str, args: tuple[Any, ...]) -> None:
    if event != AUDIT_EVENT:
        return
    for listener in list(_listeners):
        listener(args[0])
    handle(args[0])


@contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    """Call ``listener`` with the name of each protocol point this process passes, until exit."""
    install()
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def armed_faults(value: str | None = None) -> dict[str, str]:
    """``name -> action`` parsed from ``EO_FAULT_POINTS`` (or ``value``)."""
    text = os.environ.get(FAULT_POINTS_ENV, "") if value is None else value
    armed: dict[str, str] = {}
    for entry in text.split(","):
        entry = entry.strip()
        if not entry:
            continue
        name, _, action = entry.partition(":")
        armed[name.strip()] = action.strip() or "kill"
    return armed


def handle(name: str) -> None:
    """Crash (or hang) here when ``EO_FAULT_POINTS`` names ``name``; otherwise return at once.

    Raises ValueError for an action other than ``kill`` or ``hang``."""
    action = armed_faults().get(name)
    if action is None:
        return
    if action == "hang":
        if name not in _hung:
            _hung.add(name)
            print(f"EO fault point {name}: hanging (pid {os.getpid()})", file=sys.stderr, flush=True)
            _hang(float(os.environ.get(FAULT_HANG_ENV, "600")), os.environ.get(FAULT_RELEASE_ENV))
        return
    if action != "kill":
        raise ValueError(f"{FAULT_POINTS_ENV}: unknown action {action!r} for {name} (kill or hang)")
    os.kill(os.getpid(), signal.SIGKILL)


def _hang(seconds: float, release_file: str | None) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if release_file and Path(release_file).exists():
            return
        time.sleep(0.2)
