"""``eo_audit__<pipeline>``: audit a window of committed epochs on Spark, then judge it.

``resolve -> audit -> verdict``: ``resolve`` turns the Trigger form (``epochs`` "A-B",
``since`` an ISO time, ``last`` N, default 10; one of them) into committed epoch ids
(the form's ``index_budget_bytes``, default the pipeline's ``audit.index_budget_bytes``,
goes to the audit job)
(:class:`~airflow_provider_eo.operators.audit.ResolveAuditWindowOperator`); ``audit``
runs the audit application through spark-submit, which stores the report in the ledger
under the run (:class:`~airflow_provider_eo.operators.audit_submit.AuditWindowOperator`);
``verdict`` reads it, sends ``eo.audit.*`` and fails on discrepancies, so Airflow's
alerting applies (:class:`~airflow_provider_eo.operators.audit.AuditVerdictOperator`).
Scheduled by the pipeline's ``audit.schedule`` (default none: triggered only); a scheduled
run audits the ``last`` 10 committed epochs. No task retries: a failed verdict is a result.
The operators are imported by :func:`build_audit_dag`: only a process that builds an audit
DAG loads them (the audit's ``SparkSubmitOperator`` subclass among them).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Param

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.dag_ids import audit_dag_id

LEDGER_STEP_TIMEOUT = timedelta(minutes=5)


def audit_params(spec: PipelineSpec) -> dict[str, Param]:
    """The Trigger form: one of ``epochs``, ``since``, ``last`` (all empty: the last 10), and
    the index byte budget (default the pipeline's ``audit.index_budget_bytes``)."""
    from airflow_provider_eo.operators.audit import DEFAULT_LAST

    return {
        "epochs": Param(
            None,
            type=["null", "string"],
            pattern=r"^\s*\d+\s*(-\s*\d+\s*)?$",
            title="Epochs",
            description="A-B: the pipeline's committed epochs with ids A to B (inclusive).",
        ),
        "since": Param(
            None,
            type=["null", "string"],
            title="Since",
            description="An ISO time (2026-11-29T04:00:00Z): the epochs committed at or after it.",
        ),
        "last": Param(
            None,
            type=["null", "integer"],
            minimum=1,
            title="Last",
            description=f"The N newest committed epochs (default {DEFAULT_LAST} when nothing is chosen).",
        ),
        "index_budget_bytes": Param(
            spec.audit.index_budget_bytes,
            type=["null", "integer"],
            minimum=1,
            title="Index budget (bytes)",
            description="The byte budget of the audit's window index: over it, the rows are audited "
            "in buckets, one pass each (docs/audit.md). Default: the pipeline's audit.index_budget_bytes.",
        ),
    }


def build_audit_dag(spec: PipelineSpec, pipelines_file: str, start_date: Any) -> DAG:
    """resolve -> audit -> verdict for one pipeline (see the module doc)."""
    from airflow_provider_eo.operators.audit import AuditVerdictOperator, ResolveAuditWindowOperator
    from airflow_provider_eo.operators.audit_submit import AuditWindowOperator

    common: dict[str, Any] = {"pipeline": spec.name, "spec": spec, "pipelines_file": pipelines_file}
    window = "{{ ti.xcom_pull(task_ids='resolve')['epoch_ids'] }}"
    with DAG(
        dag_id=audit_dag_id(spec.name),
        schedule=spec.audit.schedule,
        start_date=start_date,
        catchup=False,
        max_active_runs=1,
        params=audit_params(spec),
        tags=["eo", "eo:audit", f"eo:{spec.name}"],
        doc_md=(
            f"**Audit**: re-read the committed epochs of pipeline `{spec.name}` from Kafka and check "
            "HBase, the dead letters and the consumer group (docs/audit.md). The verdict task fails on "
            "discrepancies; `eo-ledger audits` and the audit pages list them."
        ),
    ) as dag:
        resolve = ResolveAuditWindowOperator(
            task_id="resolve",
            epochs="{{ params.epochs or '' }}",
            since="{{ params.since or '' }}",
            last="{{ params.last or '' }}",
            execution_timeout=LEDGER_STEP_TIMEOUT,
            **common,
        )
        audit = AuditWindowOperator(
            task_id="audit",
            epoch_ids=window,
            index_budget_bytes="{{ params.index_budget_bytes or '' }}",
            map_index_template="epochs {{ ti.xcom_pull(task_ids='resolve')['first'] }}-"
            "{{ ti.xcom_pull(task_ids='resolve')['last'] }}",
            execution_timeout=timedelta(minutes=spec.timeouts.write_minutes),
            **common,
        )
        verdict = AuditVerdictOperator(task_id="verdict", execution_timeout=LEDGER_STEP_TIMEOUT, **common)
        resolve >> audit >> verdict
    return dag
