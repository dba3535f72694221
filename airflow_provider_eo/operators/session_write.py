"""The write operator's session mode (``spark.mode: session``): the Airflow task writes the
epoch itself as one job on the Spark Connect server of ``spark.connect_conn_id``.

:class:`SessionWrite` is a thin adapter: it resolves the ``spark_connect`` connection to its
``sc://`` URL through the Spark provider's ``SparkConnectHook``, puts the pipeline's
connections in this process's environment only while the write runs (the same
``AIRFLOW_CONN_*`` values a submit mode driver gets), and runs
:func:`~airflow_provider_eo.spark.session.session_write.write_on_session`, whose
``write_epoch`` owns the fencing check and the vote. :meth:`SessionWrite.interrupt`
(``on_kill``) interrupts the try's job by its tag. A write that does not end with exit code 0
raises :class:`SessionWriteFailed` naming the pipeline, the epoch and the outcome.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.errors import TaskError
from airflow_provider_eo.operators.run_context import task_actor
from airflow_provider_eo.operators.spark_submission import process_environment

if TYPE_CHECKING:  # imported by run(): a task that only parses the DAG never loads the write
    from airflow_provider_eo.spark.driver.write_epoch import ExitCode
    from airflow_provider_eo.spark.session.connect_tasks import SessionTasks

log = logging.getLogger(__name__)


class SessionWriteFailed(TaskError):
    """The session-mode write ended without the epoch voted (``exit_code`` says how)."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def connect_url(conn_id: str) -> str:
    """The ``sc://`` URL of the ``spark_connect`` connection ``conn_id`` (token and user id in it)."""
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    return SparkConnectHook(conn_id).get_connection_url()


class SessionWrite:
    """One try's session-mode write of one epoch (made by ``WriteEpochOperator.execute``)."""

    def __init__(
        self, spec: PipelineSpec, epoch_id: int, fencing_token: str | None, conn_ids: dict[str, str]
    ) -> None:
        self.spec = spec
        self.epoch_id = epoch_id
        self.fencing_token = fencing_token
        self.conn_ids = conn_ids
        self.runner: SessionTasks | None = None
        self.session: Any = None

    def run(self, context: Any, env: dict[str, str]) -> None:
        """Write and vote the epoch; raises :class:`SessionWriteFailed` unless it ends voted
        (or already voted under this token), ``ConnectServerUnreachable`` (within 10 s, nothing
        written) when the server does not accept connections, and the Spark Connect client's
        errors when it fails later."""
        from airflow_provider_eo.spark.driver.task_settings import ledger_dsn_from_env
        from airflow_provider_eo.spark.driver.write_epoch import ExitCode
        from airflow_provider_eo.spark.session.connect_tasks import job_tag
        from airflow_provider_eo.spark.session.session_write import (
            check_reachable,
            close_session,
            credentials_session_id,
            open_session,
            write_on_session,
        )

        ti = context.get("ti") if context else None
        tag = job_tag(self.spec.name, self.epoch_id, getattr(ti, "try_number", None))
        url = connect_url(self.spec.spark.connect_conn_id)
        where = (
            f"pipeline={self.spec.name} epoch_id={self.epoch_id} connection={self.spec.spark.connect_conn_id}"
        )
        check_reachable(url, where)
        with process_environment(env):
            connections = {name: value for name, value in env.items() if name.startswith("AIRFLOW_CONN_")}
            self.session = open_session(url, credentials_session_id(connections))
            try:
                code = write_on_session(
                    self.session,
                    self.spec,
                    self.epoch_id,
                    tag=tag,
                    fencing_token=self.fencing_token,
                    ledger_dsn=ledger_dsn_from_env(self.conn_ids["ledger_conn_id"]),
                    ledger_conn_id=self.conn_ids["ledger_conn_id"],
                    actor=task_actor(context),
                    conn_ids=self.conn_ids,
                    on_runner=self._keep,
                )
            finally:
                close_session(self.session, release=False)  # the pipeline's next epoch reuses it
        if code != ExitCode.OK:
            raise SessionWriteFailed(
                f"pipeline={self.spec.name} epoch_id={self.epoch_id}: session-mode write ended "
                f"{code.name} (exit code {int(code)}), epoch not voted by this try; see the task log",
                code,
            )

    def _keep(self, runner: SessionTasks) -> None:
        self.runner = runner

    def interrupt(self) -> None:
        """Interrupt this try's job by its tag (nothing when none started)."""
        if self.runner is None:
            return
        try:
            interrupted = self.runner.interrupt()
        except Exception as exc:  # the session already released: its job has ended
            log.info("pipeline=%s epoch_id=%s: nothing to interrupt (%s)", self.spec.name, self.epoch_id, exc)
            return
        log.info("pipeline=%s epoch_id=%s: interrupted %s", self.spec.name, self.epoch_id, interrupted)
