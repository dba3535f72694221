"""The running task's DAG run, as the protocol names the owner of an epoch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_eo.ledger.model.runs import RunIdentity


def run_identity(context: Mapping[str, Any]) -> RunIdentity:
    """The running task's DAG run, from ``context["ti"]`` (or ``context["dag_run"]``)."""
    ti = context.get("ti")
    if ti is not None:
        return RunIdentity(str(ti.dag_id), str(ti.run_id))
    dag_run = context["dag_run"]
    return RunIdentity(str(dag_run.dag_id), str(dag_run.run_id))
