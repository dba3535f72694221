"""The running task as the ledger knows it: its DAG run (the owner of the epochs it
reserves) and its task instance (the actor the epochs' history records)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.runs import RunIdentity


def run_identity(context: Mapping[str, Any]) -> RunIdentity:
    """The running task's DAG run, from ``context["ti"]`` (or ``context["dag_run"]``)."""
    ti = context.get("ti")
    if ti is not None:
        return RunIdentity(str(ti.dag_id), str(ti.run_id))
    dag_run = context["dag_run"]
    return RunIdentity(str(dag_run.dag_id), str(dag_run.run_id))


def task_actor(context: Any) -> Actor:
    """The running task instance as the ledger's actor (``Actor.task``: DAG, run, task and
    try, from ``context["ti"]``); without a ``ti`` (a bare ``execute`` call) the process."""
    ti = context.get("ti") if context is not None else None
    if ti is None:
        return Actor.process()
    return Actor.task(str(ti.dag_id), str(ti.run_id), str(ti.task_id), getattr(ti, "try_number", None))
