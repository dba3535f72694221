"""The stack's Airflow with the CeleryExecutor, for the Celery faults (test_celery_faults.py).

:func:`running_celery_airflow` runs what ``eo-stack up --executor celery`` runs, on the
fault stack: Redis (:class:`~eo_devtools.stack.redis_broker.RedisService`) and the stack's
:class:`~eo_devtools.stack.airflow.LocalAirflow` under
:class:`~eo_devtools.stack.celery_executor.CeleryParts` (api-server, scheduler,
dag-processor, triggerer and two ``airflow celery worker`` nodes, ``worker1@host`` and
``worker2@host``, one task at a time each), with a metadata database of its own on the
fault stack's PostgreSQL. Its DAG folder builds the product's DAGs with a 1 s
``retry_delay`` (:data:`tests.faults.airflow_services.DAG_FILE`) from a pipelines file the
tests extend (:meth:`CeleryAirflow.serve`). Every process gets the short heartbeat timeout
of the fault suite and the ``spark.task.after_segment:hang`` fault point, held while the
release file is absent (:meth:`CeleryAirflow.hold_writes`).

Task instances are read from the metadata database: ``hostname`` says which worker ran a
try (the workers' processes report their Celery node name).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import yaml

from eo_devtools.demo.expected_state import JsonOracle, ProducedRecord
from eo_devtools.stack.airflow import LocalAirflow
from eo_devtools.stack.airflow_api import AirflowClient
from eo_devtools.stack.airflow_config import FAST_SETTINGS, LOW_LATENCY_SETTINGS, AirflowConfig
from eo_devtools.stack.airflow_executor import CELERY, AirflowExecutor
from eo_devtools.stack.airflow_metadata import drop_database
from eo_devtools.stack.airflow_services import AirflowService
from eo_devtools.stack.celery_executor import CeleryParts
from eo_devtools.stack.celery_worker import CeleryWorkerService
from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.process import running_pid
from eo_devtools.stack.redis_broker import REDIS_PORT_KEY, RedisService
from eo_devtools.stack.service_process import start_service, stop_service
from tests.airflow_metadata_template import prepare_local_airflow_database
from tests.faults.airflow_services import DAG_FILE, HANG, HANGING_RE, HEARTBEAT_TIMEOUT_S, RETRY_DELAY_S
from tests.faults.crash_points import crash_env
from tests.faults.harness import Case, FaultStack, hang_env

WORKERS = 2
SHORT_HEARTBEATS = {
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT_S),
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2",
    "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "2",
}


@dataclass(frozen=True)
class TaskTry:
    """One try of a task instance, as the metadata database has it."""

    try_number: int
    state: str | None
    hostname: str
    pid: int | None


class CeleryAirflow:
    """A running Celery Airflow (see the module doc); ``client`` is its REST API as the admin."""

    def __init__(self, airflow: LocalAirflow, broker: RedisService, release: Path) -> None:
        self.airflow = airflow
        self.broker = broker
        self.release = release
        self.config = airflow.config
        self.pipelines_file = self.config.dags_folder / "pipelines.yaml"
        self.client = AirflowClient.from_login_file(self.config.login_path)

    # -- workers and broker ----------------------------------------------------------
    @property
    def workers(self) -> list[CeleryWorkerService]:
        return [s for s in self.airflow.services if isinstance(s, CeleryWorkerService)]

    def worker(self, node: str) -> CeleryWorkerService:
        """The worker whose Celery node name (and tasks' hostname) is ``node``."""
        (found,) = [w for w in self.workers if w.node == node]
        return found

    def service(self, name: str) -> AirflowService:
        """The Airflow service ``name`` (``airflow-scheduler``, ``airflow-celery-worker-1``, ...)."""
        (found,) = [s for s in self.airflow.services if s.name == name]
        return found

    def pid(self, service: CeleryWorkerService | RedisService) -> int:
        pid = running_pid(service.pid_path)
        assert pid is not None, f"{service.name} is not running"
        return pid

    def restore(self) -> None:
        """Start Redis and every service that is not running (a killed or stopped worker) and
        wait until all answer: what ``eo-stack up`` does after a crash."""
        if running_pid(self.broker.pid_path) is None:
            start_service(self.broker)
        self.airflow.up()

    # -- pipelines and runs ------------------------------------------------------------
    def serve(self, case: Case) -> None:
        """Add ``case``'s pipeline to the served file and wait until its stream DAG is parsed."""
        served = yaml.safe_load(self.pipelines_file.read_text())
        served["pipelines"] += yaml.safe_load(case.pipelines_file.read_text())["pipelines"]
        tmp = self.pipelines_file.with_name(f".pipelines-{uuid.uuid4().hex}.yaml")
        tmp.write_text(yaml.safe_dump(served, sort_keys=False))
        tmp.replace(self.pipelines_file)
        os.utime(self.config.dags_folder / "eo_fault_dags.py")  # parsed again first
        self.client.wait_for_dag(case.dag_id)

    def hold_writes(self) -> None:
        """From now on a write's Spark tasks stop after their first HBase segment."""
        self.release.unlink(missing_ok=True)

    def release_writes(self) -> None:
        self.release.touch()

    def trigger(self, dag_id: str) -> str:
        return self.client.trigger(dag_id)

    def wait_for_hanging(
        self, dag_id: str, run_id: str, task_id: str, attempt: int, timeout: float = 240
    ) -> int:
        """The pid of the first Spark worker of ``attempt`` that stands at the fault point."""
        deadline = time.monotonic() + timeout
        while not (found := HANGING_RE.findall(self.task_log(dag_id, run_id, task_id, attempt))):
            assert time.monotonic() < deadline, f"no Spark worker of {task_id} try {attempt} hanging"
            time.sleep(0.25)
        return int(found[0])

    def task_log(self, dag_id: str, run_id: str, task_id: str, attempt: int) -> str:
        path = self.config.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        try:
            return (path / f"attempt={attempt}.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""

    # -- the metadata database ----------------------------------------------------------
    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        conn = psycopg2.connect(self.config.metadata_url("postgresql"))
        try:
            with conn, conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        finally:
            conn.close()

    def tries(self, dag_id: str, run_id: str, task_id: str) -> list[TaskTry]:
        """Every try of one task, the earlier ones (task_instance_history) first."""
        where = "WHERE dag_id = %s AND run_id = %s AND task_id = %s"
        rows = self.query(
            f"SELECT try_number, state, hostname, pid FROM task_instance_history {where}"
            f" UNION ALL SELECT try_number, state, hostname, pid FROM task_instance {where}"
            " ORDER BY 1",
            *(dag_id, run_id, task_id) * 2,
        )
        return [TaskTry(int(n), state, str(host or ""), pid) for n, state, host, pid in rows]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, tuple[str | None, int]]:
        rows = self.query(
            "SELECT task_id, state, try_number FROM task_instance WHERE dag_id = %s AND run_id = %s",
            dag_id,
            run_id,
        )
        return {task: (state, int(tries)) for task, state, tries in rows}

    def events(self, dag_id: str, run_id: str, task_id: str) -> list[str]:
        rows = self.query(
            "SELECT event FROM log WHERE dag_id = %s AND run_id = %s AND task_id = %s ORDER BY id",
            dag_id,
            run_id,
            task_id,
        )
        return [str(event) for (event,) in rows]


def expected_cells(
    produced: list[ProducedRecord], family: str
) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
    """Visible cells (value, version) after a write of ``produced`` with ``batch_size`` 1:
    every record is a segment of its own, so each cell's version is its record's offset and a
    tombstone (a family delete at its offset) hides the row's earlier cells."""
    oracle = JsonOracle(family)
    rows: dict[bytes, dict[bytes, tuple[bytes, int]]] = {}
    for record in sorted(produced, key=lambda r: (r.topic, r.partition, r.offset)):
        if oracle.is_bad(record):
            continue
        assert record.key is not None
        if record.value is None:
            rows.pop(record.key, None)
            continue
        cells = {column: (value, record.offset) for column, value in oracle.cells(record).items()}
        rows.setdefault(record.key, {}).update(cells)
    return rows


@contextlib.contextmanager
def running_celery_airflow(stack: FaultStack) -> Iterator[CeleryAirflow]:
    """Start the Celery Airflow on ``stack`` (see the module doc); stop it, drop its database
    and remove its files afterwards."""
    base = Path(tempfile.mkdtemp(prefix="eo-celery-airflow-", dir="/tmp"))
    dags_folder = base / "dags"
    dags_folder.mkdir()
    (dags_folder / "eo_fault_dags.py").write_text(DAG_FILE.format(delay=RETRY_DELAY_S))
    (dags_folder / "pipelines.yaml").write_text("pipelines: []\n")
    release = base / "release"
    release.touch()
    broker = RedisService(base, {REDIS_PORT_KEY: find_free_port()})
    config = AirflowConfig(
        state_dir=base,
        home=base / "airflow",
        port=find_free_port(),
        database=f"airflow_celery_{uuid.uuid4().hex[:8]}",
        postgres_dsn=stack.ledger_dsn,
        conn_env=stack.conn_env,
        dags_folder=dags_folder,
        pipelines_file=dags_folder / "pipelines.yaml",
        settings={
            **FAST_SETTINGS,
            **LOW_LATENCY_SETTINGS,
            **SHORT_HEARTBEATS,
            **crash_env(HANG),
            **hang_env(600, release),
        },
    )
    executor = AirflowExecutor(CELERY, WORKERS, concurrency=1)
    airflow = CeleryParts(base).airflow(config, executor, broker.ports)
    try:
        prepare_local_airflow_database(config)  # a copy of a migrated database: no migration
        start_service(broker)
        airflow.up()
        yield CeleryAirflow(airflow, broker, release)
    finally:
        airflow.kill()  # SIGKILL: nothing left to finish; the database is dropped
        stop_service(broker)
        with contextlib.suppress(Exception):  # the stack may be gone already: nothing to drop
            drop_database(config)
        shutil.rmtree(base, ignore_errors=True)
