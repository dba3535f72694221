"""The write step in session mode, run by the Airflow task itself against a Spark Connect server.

:func:`write_on_session` is the submit mode's driver (``spark/driver/application.py``) with
another runner: the same :func:`~airflow_provider_eo.spark.driver.write_epoch.write_epoch`
(fencing check, task plan, vote WRITTEN under the epoch's fencing token, all through the
ledger's :class:`~airflow_provider_eo.ledger.protocol.EpochProtocol`), with the tasks run by
:class:`~.connect_tasks.SessionTasks` on a new session of the server at ``url``. The session
gets the provider's zip as a Python artifact (:func:`~.executor_package.session_package`)
and nothing else: no conf, no credentials (those travel in the job's closure). The session is
released when the write ends, the server's JVM and executors stay warm for the next epoch.
Returns the write's :class:`~airflow_provider_eo.spark.driver.write_epoch.ExitCode`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from airflow_provider_eo.config.spec_digest import spec_digest
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.spark.driver.task_settings import task_settings
from airflow_provider_eo.spark.driver.write_epoch import ExitCode, write_epoch
from airflow_provider_eo.spark.session.connect_tasks import SessionTasks
from airflow_provider_eo.spark.session.executor_package import client_identity, session_package

log = logging.getLogger(__name__)


def open_session(url: str) -> Any:
    """A new Spark Connect session on the server at ``url`` (``sc://host:port/;...``) with
    the provider's zip added as a Python artifact."""
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(url).create()
    session.addArtifacts(str(session_package()), pyfile=True)
    return session


def write_on_session(
    session: Any,
    spec: PipelineSpec,
    epoch_id: int,
    *,
    tag: str,
    fencing_token: str | None,
    ledger_dsn: str,
    ledger_conn_id: str,
    actor: Actor,
    conn_ids: dict[str, str],
    on_runner: Callable[[SessionTasks], None] = lambda runner: None,
) -> ExitCode:
    """Write and vote ``epoch_id`` of ``spec`` with its tasks as one job on ``session``
    tagged ``tag``. Connections are read from ``AIRFLOW_CONN_*`` in this process's
    environment (``conn_ids``: ``ledger_conn_id``, ``kafka_conn_id``, ``hbase_conn_id``,
    ``schema_registry_conn_id``). ``on_runner`` is handed the runner before the job starts
    (the operator keeps it for ``on_kill``). Never raises for the outcomes of
    :func:`write_epoch`'s contract."""
    runner = SessionTasks(session, tag, client_identity())
    on_runner(runner)
    log.info("pipeline=%s epoch_id=%s: session write tag=%s", spec.name, epoch_id, tag)
    with Ledger(ledger_dsn, conn_id=ledger_conn_id, actor=actor) as ledger:
        return write_epoch(
            ledger,
            spec.name,
            epoch_id,
            lambda: task_settings(spec, epoch_id, **conn_ids),
            spec.spark.split_size,
            fencing_token=fencing_token,
            spec_digest=spec_digest(spec),
            runner=runner,
        )
