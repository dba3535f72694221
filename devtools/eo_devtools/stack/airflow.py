"""LocalAirflow: api-server, scheduler (LocalExecutor), dag-processor and triggerer for one config.

``up`` prepares once (metadata database and role, secrets, login file, ``airflow db
migrate``), starts every service that is not running (all at once: they import Airflow
in parallel) and waits until the API server reports each of them healthy; a failed
``up`` stops what it started. ``down`` stops every service's whole process group (all at
once: each shutdown takes 0.5-2 s on its own), then the task processes Airflow ran in
groups of their own (and the Spark jobs they started), found by an environment variable
every service passes on; it returns when none is left.

A service killed outside ``down`` (``kill -9`` of the scheduler) leaves its children
behind: LocalExecutor workers stay in the dead scheduler's process group and session,
task processes in groups of their own but the same session, and ``setproctitle`` has
erased the marker from most of their environments. Both ``down`` and ``up`` (before it
starts a new process for that service) therefore also SIGKILL what is left in the
session of every service whose recorded pid is dead (:meth:`LocalAirflow.leftovers`):
the kernel keeps that session id from being reused while a member lives. The
local stack (:mod:`.stack`) runs one with AIRFLOW_HOME ``<state>/airflow``; the tests'
``airflow_server`` fixture runs another with its own DAG folder and database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from eo_devtools.stack.airflow_config import AirflowConfig
from eo_devtools.stack.airflow_metadata import ensure_database, migrate
from eo_devtools.stack.airflow_services import AIRFLOW_SERVICES, SERVICE_MARKER, AirflowService
from eo_devtools.stack.process import (
    cmdline,
    has_env,
    is_running,
    kill_with_groups,
    processes_with_env,
    read_pid,
    running_pid,
    session_members,
    stop_process_group,
)
from eo_devtools.stack.service_process import launch, status_entry, stop_service, wait_healthy

SERVICE_NAMES: tuple[str, ...] = tuple(cls.name for cls in AIRFLOW_SERVICES)


class LocalAirflow:
    """The four Airflow services of ``config`` (pid files under ``<state>/pids``), then
    ``workers`` (the CeleryExecutor's, :mod:`.celery_executor`; none for the LocalExecutor)."""

    def __init__(self, config: AirflowConfig, workers: Sequence[AirflowService] = ()) -> None:
        self.config = config
        self.services: list[AirflowService] = [cls(config) for cls in AIRFLOW_SERVICES] + list(workers)

    @staticmethod
    def _pid(service: AirflowService) -> int | None:
        return running_pid(service.pid_path)

    def api_server_running(self) -> bool:
        """Whether the API server's process is alive (its pid file names a live process)."""
        return any(self._pid(s) is not None for s in self.services if s.port_keys)

    def prepare(self) -> None:
        """Metadata database and role, secrets, login file, migration (each only when needed)."""
        self.config.home.mkdir(parents=True, exist_ok=True)
        self.config.home.chmod(0o700)  # secrets, login and task logs: the owner's only
        ensure_database(self.config)
        self.config.write_login()
        migrate(self.config)

    def leftovers(self, service: AirflowService) -> list[int]:
        """What a dead ``service`` left running: the live members of the session of its
        recorded pid once that pid is dead ([] while it runs or when none is recorded).

        Only members that carry :data:`SERVICE_MARKER` for this home or whose title is an
        Airflow one (``airflow worker -- LocalExecutor``, ``airflow supervisor: ...``: renamed
        by ``setproctitle``, which erased the marker) count, a guard against a pid file far
        older than its session."""
        pid = read_pid(service.pid_path)
        return [] if pid is None or is_running(pid) else self._session_leftovers(pid)

    def _session_leftovers(self, sid: int) -> list[int]:
        home = str(self.config.home)
        return [
            member
            for member in session_members(sid)
            if has_env(member, SERVICE_MARKER, home) or cmdline(member).startswith("airflow ")
        ]

    def up(self) -> None:
        """Start every service that is not running and wait until all are healthy; first
        SIGKILL what a dead service left behind (:meth:`leftovers`: a killed scheduler's
        LocalExecutor workers and tasks), so it never runs beside its successor."""
        self.prepare()
        (self.config.state_dir / "pids").mkdir(parents=True, exist_ok=True)
        started: list[int] = []
        try:
            pids: dict[str, int] = {}
            for service in self.services:
                pid = self._pid(service)
                if pid is None:
                    kill_with_groups(self.leftovers(service))
                    pid = launch(service)
                    started.append(pid)
                pids[service.name] = pid
            for service in self.services:
                wait_healthy(service, pids[service.name])
        except BaseException:
            for pid in reversed(started):
                with contextlib.suppress(ProcessLookupError):
                    stop_process_group(pid, grace_s=10)
            raise

    def down(self) -> None:
        """Stop every service (whole process groups, all at once), then SIGKILL what is
        left in their sessions (a dead service's workers and tasks: :meth:`leftovers`) and
        what carries the marker in process groups of their own (a Spark job outliving its
        task); returns when none of their processes is left."""
        recorded = {service.name: read_pid(service.pid_path) for service in self.services}
        with ThreadPoolExecutor(len(self.services), thread_name_prefix="airflow-stop") as pool:
            list(pool.map(stop_service, reversed(self.services)))  # re-raises a stop's error
        left = [
            member for sid in recorded.values() if sid is not None for member in self._session_leftovers(sid)
        ]
        kill_with_groups(left + processes_with_env(SERVICE_MARKER, str(self.config.home)))

    def kill(self) -> None:
        """SIGKILL what :meth:`down` stops, with no grace: every service's process group,
        what is left in their sessions and what carries the marker; returns when none of
        their processes is left. For a throwaway Airflow whose files and database are
        deleted next (the test session's): running tasks are not told."""
        running = [self._pid(service) for service in self.services]
        sids = [sid for sid in running if sid is not None]
        left = [member for sid in sids for member in self._session_leftovers(sid)]
        kill_with_groups(sids + left + processes_with_env(SERVICE_MARKER, str(self.config.home)))
        for service in self.services:
            service.pid_path.unlink(missing_ok=True)

    def status(self) -> dict[str, dict[str, Any]]:
        """service -> {"pid", "port", "ports", "healthy", "state", "rss_mb"}, like the stack's;
        the API server's entry adds ``url`` and ``login_file``."""
        answer: dict[str, dict[str, Any]] = {}
        for service in self.services:
            pid = self._pid(service)
            entry = status_entry(service, pid, healthy=pid is not None and service.healthy())
            if service.port_keys:
                entry["url"] = self.config.url
                entry["login_file"] = str(self.config.login_path)
            answer[service.name] = entry
        return answer

    def is_up(self) -> bool:
        """True when every service runs and is healthy."""
        return all(entry["healthy"] for entry in self.status().values())
