"""The XCom values of the coordinator operators: what downstream tasks and users read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_eo.ledger.models import Epoch
from airflow_provider_eo.ledger.protocol import Committed
from airflow_provider_eo.ledger.recovery_plan import RunIdentity


def run_identity(context: Mapping[str, Any]) -> RunIdentity:
    """The running task's DAG run, from ``context["ti"]`` (or ``context["dag_run"]``)."""
    ti = context.get("ti")
    if ti is not None:
        return RunIdentity(str(ti.dag_id), str(ti.run_id))
    dag_run = context["dag_run"]
    return RunIdentity(str(dag_run.dag_id), str(dag_run.run_id))


def epoch_summary(epoch: Epoch) -> dict[str, Any]:
    """A reserved (or written) epoch: :meth:`Epoch.to_summary` plus ``fencing_token``, which
    the write task is handed (``dags/factory.py``)."""
    return {**epoch.to_summary(), "fencing_token": str(epoch.fencing_token)}


def commit_summary(outcome: Committed) -> dict[str, Any]:
    """A commit: :meth:`Epoch.to_summary` of the committed epoch plus ``action``
    (``"committed"``, or ``"noop"`` when it was committed already) and ``published``
    (``[{topic, partition, offset}]`` sent to the consumer group, by topic and partition)."""
    return {
        **outcome.epoch.to_summary(),
        "action": "noop" if outcome.already_committed else "committed",
        "published": [
            {"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(outcome.published.items())
        ],
    }
