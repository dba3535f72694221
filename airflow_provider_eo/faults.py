"""Test-only fault points: precise crash points for the fault-injection suite.

``fault_point(name)`` is a no-op unless the environment variable ``EO_FAULT_POINTS``
names it (comma-separated entries ``name`` or ``name:action``). Actions:

* ``kill`` (default): SIGKILL the calling process at once (no cleanup, no ``finally``),
  as a machine or OOM-killer would;
* ``hang``: the first time the point is reached in a process, sleep up to
  ``EO_FAULT_HANG_S`` seconds (default 600), or until the file named by
  ``EO_FAULT_RELEASE_FILE`` exists, so a test can act from outside (kill the driver,
  restart a service, abort the epoch) while the process stands at a known point. It
  announces itself on stderr (``EO fault point <name>: hanging (pid N)``).

Fault points in the product (each sits between two durable effects of the protocol):

| Name | Where |
|---|---|
| ``reserve.in_transaction`` | the stream reservation transaction: epoch inserted, not yet committed |
| ``reserve.after_insert`` | ReserveEpochOperator: the epoch is inserted, the task has not returned |
| ``spark.task.after_segment`` | a Spark task (Python worker): after its first HBase segment |
| ``spark.after_last_batch`` | the Spark driver: every HBase batch written, before the vote |
| ``spark.after_vote`` | the Spark driver: voted WRITTEN, before the application exits |
| ``commit.before_publish`` | commit path: the epoch read WRITTEN, group offsets not yet published |
| ``commit.after_publish`` | commit path: group offsets published, before marking COMMITTED |

Production never sets ``EO_FAULT_POINTS``; the check is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

FAULT_POINTS_ENV = "EO_FAULT_POINTS"
FAULT_HANG_ENV = "EO_FAULT_HANG_S"
FAULT_RELEASE_ENV = "EO_FAULT_RELEASE_FILE"
FAULT_POINT_NAMES = (
    "reserve.in_transaction",
    "reserve.after_insert",
    "spark.task.after_segment",
    "spark.after_last_batch",
    "spark.after_vote",
    "commit.before_publish",
    "commit.after_publish",
)
_hung: set[str] = set()


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


def fault_point(name: str) -> None:
    """Crash (or hang) here when ``EO_FAULT_POINTS`` names ``name``; otherwise do nothing."""
    if FAULT_POINTS_ENV not in os.environ:
        return
    action = armed_faults().get(name)
    if action is None:
        return
    if action == "hang":
        if name not in _hung:
            _hung.add(name)
            print(f"EO fault point {name}: hanging (pid {os.getpid()})", file=sys.stderr, flush=True)
            _hang(float(os.environ.get(FAULT_HANG_ENV, "600")), os.environ.get(FAULT_RELEASE_ENV))
        return
    os.kill(os.getpid(), signal.SIGKILL)


def _hang(seconds: float, release_file: str | None) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if release_file and Path(release_file).exists():
            return
        time.sleep(0.2)
