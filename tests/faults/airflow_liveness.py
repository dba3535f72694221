"""Recovery's liveness question answered by a real Airflow, for steps the suite drives directly.

``RecoverEpochsOperator`` asks ``context["ti"].get_dr_count(dag_id=..., run_ids=[...],
states=["queued", "running"])`` whether the run owning a RESERVED epoch is alive; a task
runner's ``ti`` sends that to Airflow's execution API, whose route
(``airflow.api_fastapi.execution_api.routes.dag_runs.get_dr_count``) counts the metadata
DB's ``dag_run`` rows. The suite's stand-in task context (tests/task_context.py) has no such
method, so a step driven directly would treat every other run as dead.

:class:`AirflowDagRunCount` is that ``get_dr_count`` for a real Airflow's metadata DB: the
execution API's own route function, run on a session of the DB the Airflow processes
(``airflow dags test``, the scheduler) write. A :class:`~tests.faults.harness.Case` bound
to it (``PostgresAirflow.runner``) passes it to every operator it drives directly.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import create_engine
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool


class AirflowDagRunCount:
    """``get_dr_count`` of the Task SDK's ``RuntimeTaskInstance``, answered from the metadata
    DB at ``sqlalchemy_url`` by Airflow's execution API route (one short session per call,
    no pooled connection left open)."""

    def __init__(self, sqlalchemy_url: str) -> None:
        self._engine = create_engine(sqlalchemy_url, poolclass=NullPool)

    def __call__(
        self,
        dag_id: str,
        logical_dates: list[datetime] | None = None,
        run_ids: list[str] | None = None,
        states: list[str] | None = None,
    ) -> int:
        """How many DAG runs of ``dag_id`` match (every filter given; None: not filtered)."""
        from airflow.api_fastapi.execution_api.routes.dag_runs import get_dr_count

        with Session(self._engine) as session:
            return int(get_dr_count(dag_id, session, logical_dates, run_ids, states))
