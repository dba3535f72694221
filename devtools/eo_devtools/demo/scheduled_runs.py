"""DAG runs through the local stack's Airflow scheduler, driven over the REST API like a user would.

``trigger`` -> the scheduler queues the run, LocalExecutor runs its tasks -> the run ends
``success`` or ``failed``. A failed run's :class:`RunOutcome` names each task's state and
where its logs are (they also show in the UI).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eo_devtools.stack.airflow_api import AirflowClient


@dataclass(frozen=True)
class RunOutcome:
    """How one DAG run ended."""

    dag_id: str
    run_id: str
    state: str
    task_states: dict[str, str | None] = field(default_factory=dict)
    logs: Path | None = None

    def describe(self) -> str:
        """``dag/run: state`` plus, for a failed run, task states and the log folder."""
        text = f"{self.dag_id} run {self.run_id}: {self.state}"
        if self.state != "success":
            text += f"; tasks {self.task_states}; logs under {self.logs}"
        return text


class ScheduledRuns:
    """Runs DAGs of the Airflow behind ``client``; task logs live under ``log_folder``."""

    def __init__(self, client: AirflowClient, log_folder: Path, run_timeout_s: float = 900) -> None:
        self.client = client
        self.log_folder = log_folder
        self.run_timeout_s = run_timeout_s

    def prepare(self, dag_id: str, timeout_s: float = 300) -> None:
        """Wait until the dag-processor has parsed ``dag_id``, then unpause it."""
        self.client.wait_for_dag(dag_id, timeout_s)
        self.client.unpause(dag_id)

    def run(self, dag_id: str, conf: dict[str, Any] | None = None) -> RunOutcome:
        """Trigger one run and wait for its end (``TimeoutError`` after ``run_timeout_s``)."""
        run_id = self.client.trigger(dag_id, conf)
        state = self.client.wait_for_run(dag_id, run_id, self.run_timeout_s)
        tasks = self.client.task_states(dag_id, run_id) if state != "success" else {}
        logs = self.log_folder / f"dag_id={dag_id}" / f"run_id={run_id}"
        return RunOutcome(dag_id, run_id, state, tasks, logs)
