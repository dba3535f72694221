"""An Airflow of a benchmark's own on the local stack (``epoch_overhead``, ``freshness``).

:func:`bench_airflow` starts api-server, scheduler (LocalExecutor), dag-processor and
triggerer on the stack's PostgreSQL with their own metadata database and DAG folder, so a
developer's stack Airflow is never touched; the folder holds the repository's DAG template
serving the benchmark's pipelines, and any extra DAG files.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from eo_devtools.stack.airflow import LocalAirflow
from eo_devtools.stack.airflow_api import AirflowClient
from eo_devtools.stack.airflow_config import (
    ADMIN_USER,
    LOW_LATENCY_SETTINGS,
    AirflowConfig,
)
from eo_devtools.stack.airflow_metadata import drop_database
from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.stack import REPO_DAGS_DIR, LocalStack

EPOCH_SETTINGS: Mapping[str, str] = LOW_LATENCY_SETTINGS
"""The Airflow settings the epoch benchmarks run under, as docs/performance.md recommends for
low-latency pipelines: the scheduler's short idle sleep. Not the forkserver preload of
:mod:`airflow_provider_eo.dags.worker_preload`: measured slower in all (docs/performance.md,
"Task start")."""


@contextlib.contextmanager
def bench_airflow(
    stack: LocalStack,
    settings: Mapping[str, str],
    base: Path,
    pipelines: list[dict[str, Any]],
    extra_dags: Sequence[Path] = (),
) -> Iterator[LocalAirflow]:
    """An Airflow of the benchmark's own on ``stack``, its files under ``base``, serving
    ``pipelines`` (written before it starts: parsed at once) and ``extra_dags`` (copied into
    its DAG folder); stopped, its database dropped after."""
    dags = base / "dags"
    dags.mkdir()
    shutil.copy(REPO_DAGS_DIR / "eo_pipelines.py", dags / "eo_pipelines.py")
    for extra in extra_dags:
        shutil.copy(extra, dags / extra.name)
    (dags / "pipelines.yaml").write_text(yaml.safe_dump({"pipelines": pipelines}, sort_keys=False))
    config = AirflowConfig(
        state_dir=base,
        home=base / "airflow",
        port=find_free_port(),
        database=f"airflow_bench_{uuid.uuid4().hex[:8]}",
        postgres_dsn=stack.ledger_dsn,
        conn_env=stack.conn_env(),
        dags_folder=dags,
        settings=settings,
    )
    airflow = LocalAirflow(config)
    try:
        airflow.up()
        yield airflow
    finally:
        airflow.down()
        with contextlib.suppress(Exception):
            drop_database(config)


def admin_client(airflow: LocalAirflow) -> AirflowClient:
    """A REST client of ``airflow`` signed in as its admin."""
    config = airflow.config
    return AirflowClient(config.url, ADMIN_USER, config.secrets()["admin_password"])
