"""The four long-running Airflow processes of a local Airflow, as local-stack services.

Each runs ``python -m airflow <command>`` (this interpreter) in AIRFLOW_HOME with the
environment of :meth:`AirflowConfig.environment`; logs go to
``<state>/logs/airflow-<command>.log`` and pids to ``<state>/pids/``. The API server
binds 127.0.0.1 only; the scheduler and the triggerer skip their log servers (which
would listen on every interface): the API server reads task and trigger logs from
AIRFLOW_HOME directly. Health: the API server answers ``/api/v2/monitor/health``, and
that answer reports the other three healthy (their heartbeats in the metadata DB).
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from eo_devtools.stack.airflow_config import AirflowConfig
from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.service import Service

API_PORT_KEY = "airflow-api"
SERVICE_MARKER = "EO_STACK_AIRFLOW_HOME"
"""Set (to AIRFLOW_HOME) in every service's environment: their task processes, which run in
process groups of their own, inherit it, so ``down`` finds them (:func:`processes_with_env`)."""


def health(config: AirflowConfig) -> dict[str, Any] | None:
    """The API server's ``/api/v2/monitor/health`` answer, None when it does not answer 200."""
    try:
        with urllib.request.urlopen(f"{config.url}/api/v2/monitor/health", timeout=3) as response:
            if response.status != 200:
                return None
            answer: dict[str, Any] = json.loads(response.read())
            return answer
    except (OSError, urllib.error.URLError, ValueError):
        return None


class AirflowService(Service):
    """``airflow <command>`` for one :class:`AirflowConfig`; ``component``: its key in the health answer."""

    command: tuple[str, ...] = ()
    component: str = ""
    startup_timeout_s = 240.0
    stop_grace_s = 30.0
    port_keys: tuple[str, ...] = ()

    def __init__(self, config: AirflowConfig) -> None:
        super().__init__(config.state_dir, {API_PORT_KEY: config.port})
        self.config = config

    def arguments(self) -> tuple[str, ...]:
        """The ``airflow`` subcommand and its options. No secrets."""
        return self.command

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "airflow", *self.arguments()]

    def cwd(self) -> Path:
        return self.config.home

    def environment(self) -> dict[str, str]:
        env = self.config.environment()
        return {**env, "EO_STACK_STATE_DIR": str(self.state_dir), SERVICE_MARKER: str(self.config.home)}

    def healthy(self) -> bool:
        answer = health(self.config)
        if answer is None:
            return False
        return bool(answer.get(self.component, {}).get("status") == "healthy")


class AirflowApiServer(AirflowService):
    """The UI, the REST API v2, the execution API of the tasks and the plugins (``/eo``)."""

    name = "airflow-api-server"
    port_keys = (API_PORT_KEY,)
    component = "metadatabase"

    def arguments(self) -> tuple[str, ...]:
        return ("api-server", "--host", LOOPBACK, "--port", str(self.config.port), "--workers", "1")


class AirflowScheduler(AirflowService):
    """Schedules DAG runs and runs their tasks in LocalExecutor worker processes."""

    name = "airflow-scheduler"
    command = ("scheduler", "--skip-serve-logs")
    component = "scheduler"


class AirflowDagProcessor(AirflowService):
    """Parses the DAG folder into the metadata DB."""

    name = "airflow-dag-processor"
    command = ("dag-processor",)
    component = "dag_processor"


class AirflowTriggerer(AirflowService):
    """Runs the triggers of deferred tasks."""

    name = "airflow-triggerer"
    command = ("triggerer", "--skip-serve-logs")
    component = "triggerer"


AIRFLOW_SERVICES: tuple[type[AirflowService], ...] = (
    AirflowApiServer,
    AirflowScheduler,
    AirflowDagProcessor,
    AirflowTriggerer,
)
"""Start order (the others report their health through the API server); they stop in reverse."""
