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
    """A reserved epoch: id, pipeline, kind, state, owner, fencing token, ranges
    ``[{topic, partition, start, end, records}]`` and ``records_total``."""
    return {
        "epoch_id": epoch.epoch_id,
        "pipeline": epoch.pipeline,
        "kind": epoch.kind.value,
        "state": epoch.state.value,
        "fencing_token": str(epoch.fencing_token),
        "dag_id": epoch.dag_id,
        "run_id": epoch.run_id,
        "ranges": [r.to_summary() for r in epoch.ranges],
        "records_total": epoch.record_count,
    }


def commit_summary(outcome: Committed) -> dict[str, Any]:
    """A commit: ``{epoch_id, pipeline, kind, state, action: "committed" | "noop",
    published: [{topic, partition, offset}], records_total}``."""
    epoch = outcome.epoch
    return {
        "epoch_id": epoch.epoch_id,
        "pipeline": epoch.pipeline,
        "kind": epoch.kind.value,
        "state": epoch.state.value,
        "action": "noop" if outcome.already_committed else "committed",
        "published": [
            {"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(outcome.published.items())
        ],
        "records_total": epoch.record_count,
    }
