"""Airflow DAG runs as the ledger knows them: the owner of the epochs a run reserves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from airflow_provider_eo.ledger.model.epoch import Epoch


@dataclass(frozen=True)
class RunIdentity:
    """An Airflow DAG run: the owner of the epochs it reserves."""

    dag_id: str
    run_id: str

    def owns(self, epoch: Epoch) -> bool:
        """Whether this run reserved ``epoch``."""
        return (epoch.dag_id, epoch.run_id) == (self.dag_id, self.run_id)

    def __str__(self) -> str:
        return f"{self.dag_id}/{self.run_id}"


#: Whether Airflow reports a run queued or running.
RunIsLive = Callable[[RunIdentity], bool]
