"""AuditWindowOperator: run the audit application for a window of committed epochs.

The write operator's submission (:class:`~airflow_provider_eo.operators.write.WriteEpochOperator`:
the pipeline's Spark settings and master, ``--py-files``, the connections and the spec in the
driver's environment or, in cluster deploy mode, a private file; never in argv) with the
audit application (``spark/driver/audit_application.py``) and its arguments: the pipeline,
the epoch ids, the run key the audit is stored under, connection ids. The application exits
0 once the audit is stored, whatever its verdict (the DAG's verdict task judges it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_eo.audit.epoch_id_runs import parse_runs, runs_text
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.operators.audit import run_key
from airflow_provider_eo.operators.write import WriteEpochOperator, application_path


class AuditWindowOperator(WriteEpochOperator):
    """Submit the audit of the committed epochs ``epoch_ids`` of ``pipeline``.

    :param epoch_ids: "12-13,15" or "12,13,15" (templated; usually the resolve task's XCom);
        passed to the application as runs.
    :param index_budget_bytes: the byte budget of the audit's window index (templated: an
        integer >= 1, or empty for the pipeline's ``audit.index_budget_bytes``); passed as
        ``--index-budget-bytes``. Anything else raises ``ConfigError`` naming the pipeline
        and the field, before anything is submitted.

    Every other parameter is :class:`WriteEpochOperator`'s (no epoch id, no fencing token).
    ``execute`` raises the hook's ``AirflowException`` when the application fails (nothing
    stored) and ``ConfigError`` for a refused submission; ``on_kill`` is the write
    operator's (kills the spark-submit it started, and its YARN application).
    """

    template_fields: Sequence[str] = (*WriteEpochOperator.template_fields, "epoch_ids", "index_budget_bytes")
    ui_color = "#fff0d0"

    def __init__(self, *, epoch_ids: str, index_budget_bytes: int | str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.epoch_ids = epoch_ids
        self.index_budget_bytes = index_budget_bytes
        self.application = application_path("airflow_provider_eo.spark.driver.audit_application")
        self.name = f"eo-audit-{self.pipeline}"

    def window_text(self) -> str:
        """The window's ids as runs (``12-15,18``: one short argument for consecutive epochs,
        whatever their number); ``ConfigError`` when ``epoch_ids`` is not ids or runs."""
        try:
            return runs_text(parse_runs(str(self.epoch_ids)))
        except ValueError as exc:
            raise ConfigError(f"pipeline {self.pipeline}: {exc}") from None

    def index_budget(self) -> int:
        """The chosen budget, or the spec's ``audit.index_budget_bytes`` when empty;
        ``ConfigError`` naming the pipeline and the field when not an integer >= 1."""
        text = str(self.index_budget_bytes).strip()
        if not text:
            return self.spec.audit.index_budget_bytes
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(
                f"pipeline {self.pipeline}: index_budget_bytes must be an integer >= 1 (bytes), got {text!r}"
            )
        return int(text)

    def submission_subject(self) -> tuple[str, str]:
        """The audit's log line: the pipeline's audited window, not an epoch id."""
        return "Auditing window", f"epoch_ids={self.window_text()}"

    def application_arguments(self, context: Any, epoch_id: str) -> list[str]:
        """``--pipeline P --epoch-ids RUNS --run-key DAG/RUN`` and the connection ids."""
        return [
            "--pipeline", self.pipeline, "--epoch-ids", self.window_text(),
            "--run-key", run_key(context), "--index-budget-bytes", str(self.index_budget()),
            *self.conn_id_args(),
        ]  # fmt: skip

    def execute(self, context: Any) -> None:
        """Submit the audit (see the class doc); its report is in the ledger afterwards."""
        self.index_budget()  # a bad budget is refused before anything is submitted
        env = self.application_env()
        target = self.submission_target(env)
        self.write(context, target, env)
