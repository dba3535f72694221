"""The audit DAG's ledger steps: resolve the window, then judge the stored audit.

:class:`ResolveAuditWindowOperator` turns the Trigger form's choice (``epochs`` "A-B",
``since`` an ISO time, ``last`` N; one of them) into the pipeline's committed epoch ids
(:func:`resolve_window`); :class:`AuditVerdictOperator` reads the audit the Spark job
stored for this run (``audit_of_run``), sends its metrics and fails when it found
discrepancies. Both only read the ledger. The Spark job between them is
:class:`~airflow_provider_eo.operators.audit_submit.AuditWindowOperator`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException

from airflow_provider_eo.audit.epoch_id_runs import runs_text
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator
from airflow_provider_eo.operators.run_context import run_identity

#: Epochs audited when the form names no window.
DEFAULT_LAST = 10
COMMITTED = frozenset({EpochState.COMMITTED})


class AuditWindowRefused(AirflowException):
    """The form's window is malformed or holds no committed epoch of the pipeline."""


def run_key(context: Mapping[str, Any]) -> str:
    """``<dag_id>/<run_id>``: the key the run's audit is stored under (a retry replaces it)."""
    run = run_identity(context)
    return f"{run.dag_id}/{run.run_id}"


def _epoch_range(text: str) -> tuple[int, int]:
    parts = [part.strip() for part in str(text).split("-")]
    if len(parts) not in (1, 2) or not all(part.isdigit() for part in parts):
        raise AuditWindowRefused(f"epochs must look like A-B (epoch ids), not {text!r}")
    first, last = int(parts[0]), int(parts[-1])
    if first > last:
        raise AuditWindowRefused(f"epochs {text}: the first id is above the last")
    return first, last


def _since(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        raise AuditWindowRefused(
            f"since must be an ISO time such as 2026-11-29T04:00:00Z, not {text!r}"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def resolve_window(
    ledger: LedgerReads, pipeline: str, *, epochs: str | None, since: str | None, last: int | None
) -> list[Epoch]:
    """The pipeline's committed epochs the choice names, oldest first: ``epochs`` "A-B"
    (ids A to B), ``since`` (committed at or after that time), else the ``last`` N newest
    (default :data:`DEFAULT_LAST`). Raises :class:`AuditWindowRefused` for more than one
    choice, a malformed one, or a window without a committed epoch (the message says which)."""
    chosen = [name for name, value in (("epochs", epochs), ("since", since), ("last", last)) if value]
    if len(chosen) > 1:
        raise AuditWindowRefused(f"pipeline {pipeline!r}: choose one of epochs, since, last; got {chosen}")
    if epochs:
        first, final = _epoch_range(epochs)
        found = ledger.epochs(EpochFilter(pipeline=pipeline, states=COMMITTED, min_id=first, max_id=final))
        what = f"with an id in {first}-{final}"
    elif since:
        moment = _since(since)
        committed = ledger.epochs(EpochFilter(pipeline=pipeline, states=COMMITTED))
        found = [e for e in committed if e.committed_at is not None and e.committed_at >= moment]
        what = f"committed since {moment.isoformat()}"
    else:
        limit = DEFAULT_LAST if last is None else int(last)
        if limit < 1:
            raise AuditWindowRefused(f"pipeline {pipeline!r}: last must be at least 1, not {limit}")
        found = ledger.epochs(EpochFilter(pipeline=pipeline, states=COMMITTED, limit=limit))
        what = f"among its {limit} newest"
    if not found:
        raise AuditWindowRefused(f"pipeline {pipeline!r} has no committed epoch {what}: nothing to audit")
    return found


class ResolveAuditWindowOperator(PipelineOperator):
    """Resolve the window to audit (:func:`resolve_window`).

    :param epochs: "A-B" (templated; usually ``{{ params.epochs }}``), or empty.
    :param since: an ISO time (templated), or empty.
    :param last: N newest committed epochs (templated), or empty: 10.

    Returns (XCom) ``{"epoch_ids": "12-13,15", "first": 12, "last": 15, "epochs": 3,
    "run_key": "<dag_id>/<run_id>"}``. Raises :class:`AuditWindowRefused`.
    """

    template_fields: Sequence[str] = (*PipelineOperator.template_fields, "epochs", "since", "last")
    ui_color = "#fff4e0"

    def __init__(
        self,
        *,
        epochs: str | None = None,
        since: str | None = None,
        last: str | int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.epochs = epochs
        self.since = since
        self.last = last

    def execute(self, context: Context) -> dict[str, Any]:
        last = int(self.last) if self.last not in (None, "", "None") else None
        with EoLedgerHook(self.ledger_conn_id).get_ledger() as ledger:
            found = resolve_window(
                ledger, self.pipeline, epochs=self.epochs or None, since=self.since or None, last=last
            )
        ids = [epoch.epoch_id for epoch in found]
        window = runs_text(ids)
        log_line = "pipeline=%s: auditing %d committed epochs epoch_ids=%s"
        self.log.info(log_line, self.pipeline, len(ids), window)
        key = run_key(context)
        return {
            "epoch_ids": window,
            "first": ids[0],
            "last": ids[-1],
            "epochs": len(ids),
            "run_key": key,
        }


class AuditVerdictOperator(PipelineOperator):
    """Judge this run's stored audit: send ``eo.audit.records`` and ``eo.audit.discrepancies``
    (``observability/audit_metrics.py``), return its summary (XCom), and raise
    ``AirflowException`` naming the counts and the audit id when its verdict is
    ``discrepancies`` (or when the run stored no audit)."""

    ui_color = "#ffe8e8"

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_eo.observability.audit_metrics import send_audit_metrics

        key = run_key(context)
        with EoLedgerHook(self.ledger_conn_id).get_ledger() as ledger:
            record = ledger.audit_of_run(key)
        if record is None:
            raise AirflowException(f"pipeline {self.pipeline!r}: run {key} stored no audit")
        send_audit_metrics(record)
        summary = record.to_json()
        summary.pop("findings")
        offsets = record.summary.get("offsets", {})
        counts = (
            f"{offsets.get('records_written', 0)} records written, "
            f"{offsets.get('dead_letters', 0)} dead letters, "
            f"{record.findings_total} findings {record.summary.get('findings_by_kind', {})}"
        )
        window = f"{min(record.epoch_ids)}-{max(record.epoch_ids)}"
        where = f"audit {record.audit_id} of pipeline {self.pipeline!r}, epochs {window}"
        if record.verdict != "clean":
            raise AirflowException(f"{where}: discrepancies: {counts} (eo-ledger audits, docs/audit.md)")
        self.log.info("%s: clean: %s", where, counts)
        return summary
