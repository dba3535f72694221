"""The session's real Airflow: the ``airflow_server`` fixture (registered in tests/conftest.py).

One Airflow per test session, started the first time a test asks for it, on the
session's stack: the local stack's own :class:`LocalAirflow` (api-server, scheduler
with LocalExecutor, dag-processor, triggerer), with

* a metadata database of its own (``airflow_test_<hex>``, dropped at session end) on
  the stack's PostgreSQL, so it never meets a developer's stack Airflow;
* a DAG folder of its own holding the repository's DAG template (``dags/eo_pipelines.py``,
  copied unchanged) and a ``pipelines.yaml`` that starts empty (only ``eo_recovery``)
  and that tests extend with :meth:`AirflowServer.add_pipeline`;
* short intervals (:data:`FAST_SETTINGS`): a new pipeline's DAGs are parsed within seconds,
  and are unpaused from the start (a triggered run starts at once); and the scheduler's
  short idle sleep (:data:`LOW_LATENCY_SETTINGS`): a task is queued within 0.1 s of its
  upstream's success instead of up to 1 s later (docs/performance.md measures both);
* OpenLineage on, with the file transport (tests/openlineage_events.py): the write and
  commit tasks' events are appended to :attr:`AirflowServer.lineage_file`
  (:meth:`AirflowServer.lineage_events` reads them back).

Set ``EO_TEST_KEEP_AIRFLOW=1`` to keep its files (service logs under ``logs/``, task logs
under ``airflow/logs/``) and database after the session, for a post-mortem.

Tests drive it through the public REST API v2 like a user would (:class:`AirflowClient`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from eo_devtools.stack.airflow import LocalAirflow
from eo_devtools.stack.airflow_api import AirflowClient
from eo_devtools.stack.airflow_config import (
    ADMIN_USER,
    FAST_SETTINGS,
    LOW_LATENCY_SETTINGS,
    AirflowConfig,
)
from eo_devtools.stack.airflow_metadata import drop_database
from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.stack import REPO_DAGS_DIR
from tests.airflow_metadata_template import prepare_local_airflow_database
from tests.conftest import StackInfo
from tests.openlineage_events import openlineage_settings, wait_for_events

DAG_TEMPLATE = "eo_pipelines.py"
LINEAGE_FILE = "openlineage-events.jsonl"


class AirflowServer:
    """A running Airflow (see the module doc); ``env`` holds secrets: never print it."""

    def __init__(self, airflow: LocalAirflow) -> None:
        self.airflow = airflow
        config = airflow.config
        self.url = config.url
        self.username = ADMIN_USER
        self.password = config.secrets()["admin_password"]
        self.home = config.home
        self.env = config.environment()
        self.dags_folder = config.dags_folder
        self.pipelines_file = config.dags_folder / "pipelines.yaml"
        self.lineage_file = config.state_dir / LINEAGE_FILE
        self.client = AirflowClient(self.url, self.username, self.password)

    def add_pipeline(self, entry: dict[str, Any]) -> None:
        """Append a pipeline (pipelines YAML schema) to the served file; its DAGs appear shortly
        (:meth:`wait_for_dag`). The file is replaced atomically: the parser never reads half of it."""
        document = yaml.safe_load(self.pipelines_file.read_text())
        document["pipelines"].append(entry)
        tmp = self.pipelines_file.with_name(f".pipelines-{uuid.uuid4().hex}.yaml")
        tmp.write_text(yaml.safe_dump(document, sort_keys=False))
        tmp.replace(self.pipelines_file)
        os.utime(self.dags_folder / DAG_TEMPLATE)  # a changed file is parsed again first

    def wait_for_dag(self, dag_id: str, timeout: float = 180) -> None:
        """Wait until the dag-processor has parsed ``dag_id``."""
        self.client.wait_for_dag(dag_id, timeout)

    def api(self, method: str, path: str, json: Any = None) -> Any:
        """``method`` on ``/api/v2/<path>`` (or an absolute path) -> the parsed JSON answer;
        raises ``AirflowApiError`` (``.status``, ``.body``) for an error status."""
        return self.client.api(method, path, json)

    def trigger(
        self, dag_id: str, conf: dict[str, Any] | None = None, logical_date: str | None = None
    ) -> str:
        """A manual run of ``dag_id``; returns its run id."""
        return self.client.trigger(dag_id, conf, logical_date)

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 300) -> str:
        """The run's final state (``success`` or ``failed``); ``TimeoutError`` after ``timeout``."""
        return self.client.wait_for_run(dag_id, run_id, timeout)

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        """``task_id`` (``task_id[map_index]`` when mapped) -> state."""
        return self.client.task_states(dag_id, run_id)

    def lineage_events(self, dag_id: str, count: int = 0, timeout: float = 60) -> list[dict[str, Any]]:
        """The OpenLineage events of ``dag_id``'s tasks, in the order they were emitted, once there
        are at least ``count`` (a task's event is written after Airflow has its success, so after
        its run may have ended); ``TimeoutError`` after ``timeout`` seconds with fewer."""
        return wait_for_events(self.lineage_file, dag_id, count, timeout)

    def log(self, service: str) -> str:
        """The output of one service: ``api-server``, ``scheduler``, ``dag-processor`` or ``triggerer``."""
        name = service if service.startswith("airflow-") else f"airflow-{service}"
        (match,) = [s for s in self.airflow.services if s.name == name]
        return match.log_path.read_text(errors="replace")


@contextlib.contextmanager
def running_airflow_server(stack: StackInfo) -> Iterator[AirflowServer]:
    """Start an :class:`AirflowServer` on ``stack``; SIGKILL it, drop its database and files afterwards."""
    base = Path(tempfile.mkdtemp(prefix="eo-airflow-server-", dir="/tmp"))
    dags_folder = base / "dags"
    dags_folder.mkdir()
    shutil.copy(REPO_DAGS_DIR / DAG_TEMPLATE, dags_folder / DAG_TEMPLATE)
    (dags_folder / "pipelines.yaml").write_text("pipelines: []\n")
    config = AirflowConfig(
        state_dir=base,
        home=base / "airflow",
        port=find_free_port(),
        database=f"airflow_test_{uuid.uuid4().hex[:8]}",
        postgres_dsn=stack.ledger_dsn,
        conn_env=stack.conn_env,
        dags_folder=dags_folder,
        settings={
            **FAST_SETTINGS,
            **LOW_LATENCY_SETTINGS,
            **openlineage_settings(base / LINEAGE_FILE),
        },
    )
    airflow = LocalAirflow(config)
    try:
        prepare_local_airflow_database(config)  # a copy of a migrated database: no migration
        airflow.up()
        yield AirflowServer(airflow)
    finally:
        airflow.kill()  # its files and database are deleted next: no graceful stop
        if os.environ.get("EO_TEST_KEEP_AIRFLOW"):
            print(f"airflow_server: kept {base} and database {config.database} (EO_TEST_KEEP_AIRFLOW)")
        else:
            with contextlib.suppress(Exception):  # the stack may be gone already: nothing to drop
                drop_database(config)
            shutil.rmtree(base, ignore_errors=True)
