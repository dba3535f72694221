"""An epoch's YARN applications as the fault tests see them: the RM's reports, the
containers' logs on the node, and the node's processes of each container.

The write step tags each submission ``eo-pipeline-<p>,eo-epoch-<id>,eo-try-<n>,...``
(``airflow_provider_eo.operators.yarn_submission``); :meth:`YarnApps.apps` finds an epoch's
applications by those tags through ``GET /ws/v1/cluster/apps?applicationTags=``. Processes
are found in ``/proc`` by the application id on their command line (the AM's and the
executors' JVMs carry their container's log dir, which names it; the Python driver and
workers descend from them): :meth:`YarnApps.am_pid` is the ApplicationMaster JVM of the
application's live attempt, :meth:`YarnApps.pids` every process of the application, which
:meth:`YarnApps.kill_leftovers` SIGKILLs at the end of a test (containers a killed
NodeManager left behind run on; no NodeManager reaps them).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

AM_CLASS = "org.apache.spark.deploy.yarn.ApplicationMaster"


@dataclass(frozen=True)
class YarnApps:
    """The stack's RM (``url``) and node (its state dir ``state_dir``)."""

    url: str
    state_dir: Path

    def apps(self, pipeline: str, epoch_id: int) -> list[dict[str, Any]]:
        """The RM's reports of ``epoch_id``'s applications (of ``pipeline``), oldest first."""
        answer = requests.get(
            f"{self.url}/ws/v1/cluster/apps", params={"applicationTags": f"eo-epoch-{epoch_id}"}, timeout=30
        )
        found = (answer.json().get("apps") or {}).get("app") or []
        tag = f"eo-pipeline-{pipeline}".lower()[:100]
        return sorted((a for a in found if tag in a["applicationTags"].split(",")), key=lambda a: a["id"])

    def app(self, pipeline: str, epoch_id: int, timeout: float = 180) -> dict[str, Any]:
        """The newest application of the epoch, waited for until the RM lists it."""
        deadline = time.monotonic() + timeout
        while not (found := self.apps(pipeline, epoch_id)):
            assert time.monotonic() < deadline, f"no YARN application of epoch {epoch_id} after {timeout}s"
            time.sleep(0.5)
        return found[-1]

    def attempts(self, app_id: str) -> list[dict[str, Any]]:
        """The RM's attempts of ``app_id`` (id, containerId, ...), oldest first."""
        answer = requests.get(f"{self.url}/ws/v1/cluster/apps/{app_id}/appattempts", timeout=30)
        return list((answer.json().get("appAttempts") or {}).get("appAttempt") or [])

    def report(self, app_id: str) -> dict[str, Any]:
        return dict(requests.get(f"{self.url}/ws/v1/cluster/apps/{app_id}", timeout=30).json()["app"])

    def wait_ended(self, app_id: str, timeout: float = 300) -> dict[str, Any]:
        """The application's report once it has ended (FINISHED, FAILED or KILLED)."""
        deadline = time.monotonic() + timeout
        while (report := self.report(app_id))["state"] not in ("FINISHED", "FAILED", "KILLED"):
            assert time.monotonic() < deadline, f"{app_id} still {report['state']} after {timeout}s"
            time.sleep(1.0)
        return report

    def logs(self, app_id: str) -> str:
        """Every container log of ``app_id`` on the node, concatenated."""
        root = self.state_dir / "yarn" / "nm-logs" / app_id
        return "".join(p.read_text(errors="replace") for p in sorted(root.rglob("*")) if p.is_file())

    def wait_for_log(self, app_id: str, text: str, timeout: float = 240) -> None:
        """Wait until a container log of ``app_id`` contains ``text`` (a fault point's
        announcement); AssertionError naming the application's state after ``timeout``."""
        deadline = time.monotonic() + timeout
        while text not in self.logs(app_id):
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not logged by {app_id} ({self.report(app_id)['state']})")
            time.sleep(0.5)

    def pids(self, app_id: str) -> list[int]:
        """Every process of ``app_id`` on this machine: those whose command line or ancestors'
        name it (the containers' launch scripts, JVMs, Python driver and workers)."""
        named = {pid for pid, argv in _processes().items() if app_id in " ".join(argv)}
        return sorted(pid for pid in _processes() if pid in named or _ancestors(pid) & named)

    def am_pid(self, app_id: str, timeout: float = 60) -> int:
        """The ApplicationMaster JVM of ``app_id``'s live attempt (waited for)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [p for p, argv in _processes().items() if AM_CLASS in argv and app_id in " ".join(argv)]
            if len(found) == 1:
                return found[0]
            assert time.monotonic() < deadline, f"{len(found)} ApplicationMaster JVMs of {app_id}"
            time.sleep(0.5)

    def kill_leftovers(self, app_id: str) -> list[int]:
        """SIGKILL every process of ``app_id`` still running; returns their pids."""
        found = self.pids(app_id)
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return found


def _processes() -> dict[int, list[str]]:
    """pid -> argv of every process this user may read."""
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
    return found


def _ancestors(pid: int) -> set[int]:
    seen: set[int] = set()
    while pid > 1:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            break
        pid = int(fields[1])
        seen.add(pid)
    return seen
