"""The floor of an Airflow run (benchmark, not a test): four no-op tasks in a chain.

Copied into the benchmark Airflow's DAG folder by :mod:`benchmarks.epoch_overhead`. Its
run measures what the scheduler and the LocalExecutor cost per task (queueing, process
start, DAG file parse, Task SDK handshakes) with nothing inside the tasks: the same shape
as a stream run (recover -> reserve -> write -> commit), so ``epoch_overhead_s / floor``
says how much of an epoch is Airflow's own.
"""

from __future__ import annotations

from datetime import UTC, datetime

from airflow.sdk import DAG, task

with DAG(dag_id="eo_bench_floor", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=UTC), catchup=False):

    @task
    def noop() -> None:
        """Does nothing: its duration is the task runner's own."""

    first = noop.override(task_id="recover")()
    second = noop.override(task_id="reserve")()
    third = noop.override(task_id="write")()
    fourth = noop.override(task_id="commit")()
    first >> second >> third >> fourth
