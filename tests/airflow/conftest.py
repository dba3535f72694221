"""Fixtures for DAGs run through real Airflow (``airflow dags test``) on the local stack.

``airflow_runner``: a factory ``make(pipelines_file) -> AirflowRunner``. All runners of
the session share one AIRFLOW_HOME (SQLite metadata DB, migrated once); each test
writes its own pipelines file with uuid-suffixed names and gets a runner pointed at it.

The test AIRFLOW_HOME carries a cluster policy (``config/airflow_local_settings.py``)
that sets ``retries = 0`` on every task: a deterministic failure (a bad record under
``bad_records: fail``) then fails the run at once instead of after the factory's two
30-second retry delays. Nothing else about the DAGs changes.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import happybase
import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.config import PipelineSpec, load_pipelines
from airflow_provider_eo.ledger import Ledger
from eo_devtools.demo.airflow_runner import AirflowRunner
from tests.airflow_metadata_template import migrated_sqlite_home
from tests.conftest import StackInfo

LOCAL_SETTINGS = '''"""Test-only cluster policy: no task retries (failures surface in one attempt)."""


def task_policy(task):
    task.retries = 0
'''

RunnerFactory = Callable[[Path], AirflowRunner]


@pytest.fixture(scope="session")
def airflow_home() -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="eo-airflow-home-"))
    (home / "config").mkdir()
    (home / "config" / "airflow_local_settings.py").write_text(LOCAL_SETTINGS)
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def airflow_runner(stack: StackInfo, airflow_home: Path) -> RunnerFactory:
    """``make(pipelines_file)``: a runner on the shared AIRFLOW_HOME, its metadata DB migrated
    (a copy of the session's migrated ``airflow.db``: tests/airflow_metadata_template.py)."""
    migrated_sqlite_home(airflow_home)  # a copy of the session's migrated airflow.db

    def make(pipelines_file: Path) -> AirflowRunner:
        return AirflowRunner(airflow_home, stack.conn_env, pipelines_file=pipelines_file)

    return make


@dataclass(frozen=True)
class PipelineUnderTest:
    """One uuid-named pipeline declared in its own pipelines file, with its HBase table created."""

    spec: PipelineSpec
    file: Path
    runner: AirflowRunner

    @property
    def topic(self) -> str:
        return self.spec.topics[0]

    def redeclare(self, **changes: Any) -> PipelineUnderTest:
        """Rewrite the pipelines file with top-level fields changed; the runner keeps reading it."""
        declaration = yaml.safe_load(self.file.read_text())
        declaration["pipelines"][0].update(changes)
        self.file.write_text(yaml.safe_dump(declaration))
        return PipelineUnderTest(load_pipelines(self.file)[self.spec.name], self.file, self.runner)


PipelineFactory = Callable[..., PipelineUnderTest]


@pytest.fixture(scope="session")
def pipeline_factory(
    stack: StackInfo, airflow_runner: RunnerFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PipelineFactory]:
    """``make(partitions=2, **fields) -> PipelineUnderTest``: a fresh topic, HBase table and
    pipelines file (uuid-named ``af_<tag>``); topics are deleted at session end."""
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    folder = tmp_path_factory.mktemp("pipelines")
    topics: list[str] = []

    def make(partitions: int = 2, **fields: Any) -> PipelineUnderTest:
        tag = uuid.uuid4().hex[:10]
        topic = f"eo-af-{tag}"
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(
            15
        )
        topics.append(topic)
        declaration = {
            "name": f"af_{tag}",
            "topics": [topic],
            "group_id": f"eo-af-{tag}",
            "hbase": {"table": f"af_{tag}", "column_family": "d"},
            **fields,
        }
        path = folder / f"pipelines-{tag}.yaml"
        path.write_text(yaml.safe_dump({"pipelines": [declaration]}))
        spec = load_pipelines(path)[declaration["name"]]
        connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
        try:
            connection.create_table(spec.hbase_table, {spec.column_family: {}})
        finally:
            connection.close()
        return PipelineUnderTest(spec, path, airflow_runner(path))

    yield make
    if topics:
        for future in admin.delete_topics(topics).values():
            with contextlib.suppress(Exception):
                future.result(15)


@pytest.fixture(scope="session")
def ledger(stack: StackInfo) -> Iterator[Ledger]:
    with Ledger(stack.ledger_dsn) as opened:
        yield opened


class FreshConnection(happybase.Connection):  # type: ignore[misc]
    """Reopens its socket whenever a table is asked for: HBase's Thrift server closes a
    connection idle for 60 s (``hbase.thrift.server.socket.read.timeout``), and the DAG
    runs between two reads of a test can take longer."""

    def table(self, name: Any, use_prefix: bool = True) -> happybase.Table:
        self.close()
        self.open()
        return super().table(name, use_prefix)


@pytest.fixture(scope="session")
def hbase(stack: StackInfo) -> Iterator[happybase.Connection]:
    connection = FreshConnection(stack.hbase_host, stack.hbase_port)
    yield connection
    connection.close()
