"""LocalAirflow: api-server, scheduler (LocalExecutor), dag-processor and triggerer for one config.

``up`` prepares once (metadata database and role, secrets, login file, ``airflow db
migrate``), starts every service that is not running (all at once: they import Airflow
in parallel) and waits until the API server reports each of them healthy; a failed
``up`` stops what it started. ``down`` stops each service's whole process group, then the
task processes Airflow ran in groups of their own (and the Spark jobs they started), found
by an environment variable every service passes on; it returns when none is left. The
local stack (:mod:`.stack`) runs one with AIRFLOW_HOME ``<state>/airflow``; the tests'
``airflow_server`` fixture runs another with its own DAG folder and database.
"""

from __future__ import annotations

import contextlib
from typing import Any

from eo_devtools.stack.airflow_config import AirflowConfig
from eo_devtools.stack.airflow_metadata import ensure_database, migrate
from eo_devtools.stack.airflow_services import AIRFLOW_SERVICES, SERVICE_MARKER, AirflowService
from eo_devtools.stack.ports import ensure_port_free
from eo_devtools.stack.process import (
    group_rss_mb,
    is_running,
    kill_with_groups,
    processes_with_env,
    read_pid,
    start_process,
    stop_process_group,
    wait_until_healthy,
)

SERVICE_NAMES: tuple[str, ...] = tuple(cls.name for cls in AIRFLOW_SERVICES)


class LocalAirflow:
    """The four Airflow services of ``config`` (pid files under ``<state>/pids``)."""

    def __init__(self, config: AirflowConfig) -> None:
        self.config = config
        self.services: list[AirflowService] = [cls(config) for cls in AIRFLOW_SERVICES]

    @staticmethod
    def _pid(service: AirflowService) -> int | None:
        pid = read_pid(service.pid_path)
        return pid if pid is not None and is_running(pid) else None

    def prepare(self) -> None:
        """Metadata database and role, secrets, login file, migration (each only when needed)."""
        self.config.home.mkdir(parents=True, exist_ok=True)
        self.config.home.chmod(0o700)  # secrets, login and task logs: the owner's only
        ensure_database(self.config)
        self.config.write_login()
        migrate(self.config)

    def up(self) -> None:
        """Start every service that is not running and wait until all are healthy."""
        self.prepare()
        (self.config.state_dir / "pids").mkdir(parents=True, exist_ok=True)
        started: list[int] = []
        try:
            pids: dict[str, int] = {}
            for service in self.services:
                pid = self._pid(service)
                if pid is None:
                    for key in service.port_keys:
                        ensure_port_free(service.ports[key], f"{service.name} ({key})")
                    pid = start_process(
                        service.argv(),
                        log_path=service.log_path,
                        pid_path=service.pid_path,
                        env=service.environment(),
                        cwd=service.cwd(),
                    )
                    started.append(pid)
                pids[service.name] = pid
            for service in self.services:
                wait_until_healthy(
                    service.name,
                    pids[service.name],
                    service.healthy,
                    log_path=service.log_path,
                    timeout_s=service.startup_timeout_s,
                )
        except BaseException:
            for pid in reversed(started):
                with contextlib.suppress(ProcessLookupError):
                    stop_process_group(pid, grace_s=10)
            raise

    def down(self) -> None:
        """Stop every service (reverse order, whole process groups), then SIGKILL what their
        tasks left in process groups of their own (a Spark job outliving its task); returns
        when none of their processes is left."""
        for service in reversed(self.services):
            pid = read_pid(service.pid_path)
            if pid is not None and is_running(pid):
                stop_process_group(pid, first_signal=service.stop_signal, grace_s=service.stop_grace_s)
            service.pid_path.unlink(missing_ok=True)
        kill_with_groups(processes_with_env(SERVICE_MARKER, str(self.config.home)))

    def status(self) -> dict[str, dict[str, Any]]:
        """service -> {"pid", "port", "ports", "healthy", "state", "rss_mb"}, like the stack's;
        the API server's entry adds ``url`` and ``login_file``."""
        answer: dict[str, dict[str, Any]] = {}
        for service in self.services:
            pid = self._pid(service)
            entry: dict[str, Any] = {
                "pid": pid,
                "port": service.ports[service.port_keys[0]] if service.port_keys else None,
                "ports": {key: service.ports[key] for key in service.port_keys},
                "healthy": pid is not None and service.healthy(),
                "state": "running" if pid is not None else "stopped",
                "rss_mb": group_rss_mb(pid) if pid is not None else None,
            }
            if service.port_keys:
                entry["url"] = self.config.url
                entry["login_file"] = str(self.config.login_path)
            answer[service.name] = entry
        return answer

    def is_up(self) -> bool:
        """True when every service runs and is healthy."""
        return all(entry["healthy"] for entry in self.status().values())
