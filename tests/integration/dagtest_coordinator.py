"""A coordinator DAG file (recover -> reserve -> write stand-in -> commit) for ``dag.test()``.

``test_operators_dag.py`` copies this file into a temporary DAGs folder (Airflow 3's
``dag.test()`` syncs the DAG from its bundle, so the DAG must live in a DAG file there)
and runs it as a script in a subprocess (Airflow reads AIRFLOW_HOME and the metadata DB
settings at import time). Environment: ``AIRFLOW_HOME``, ``AIRFLOW__CORE__DAGS_FOLDER``,
``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN`` (SQLite), ``AIRFLOW__CORE__LOAD_EXAMPLES=False``,
``AIRFLOW_CONN_EO_*``, ``EO_PIPELINES_FILE``, ``EO_TEST_PIPELINE``. Argument: number of
runs. Prints one JSON line per run: ``{"run_id", "state", "tasks": {task_id: state}}``.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, task

from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.recover import RecoverEpochsOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator


def build(pipeline: str) -> DAG:
    with DAG(dag_id=f"eo_test_{pipeline}", schedule=None, max_active_runs=1, catchup=False) as dag:
        recover = RecoverEpochsOperator(task_id="recover", pipeline=pipeline)
        reserve = ReserveEpochOperator(task_id="reserve", pipeline=pipeline)

        @task(task_id="write")
        def write(summary: dict[str, Any]) -> None:
            """Stand-in for the Spark step: vote WRITTEN with the reserved fencing token."""
            from airflow_provider_eo.hooks.ledger import EoLedgerHook

            with EoLedgerHook().get_ledger() as ledger:
                ledger.vote_written(summary["epoch_id"], summary["fencing_token"], {"records": 0})

        commit = CommitEpochOperator(
            task_id="commit", pipeline=pipeline, epoch_id="{{ ti.xcom_pull(task_ids='reserve')['epoch_id'] }}"
        )
        recover >> reserve
        write(reserve.output) >> commit
    return dag


dag = build(os.environ["EO_TEST_PIPELINE"])


def main() -> None:
    from airflow.utils.db import initdb

    initdb()
    base = datetime(2026, 1, 1, tzinfo=UTC)
    for index in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
        run = dag.test(logical_date=base + timedelta(hours=index))
        tasks = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
        print(json.dumps({"run_id": run.run_id, "state": str(run.state), "tasks": tasks}), flush=True)


if __name__ == "__main__":
    main()
