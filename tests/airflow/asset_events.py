"""The events of a pipeline table's Asset as Airflow recorded them (its metadata DB), and the
extra a committed epoch's event carries (``airflow_provider_eo.assets.epoch_event_extra``),
computed from the ledger's epoch, never from the code under test."""

from __future__ import annotations

import json
import sqlite3
from typing import Any
from urllib.parse import quote

from airflow_provider_eo.ledger.model.epoch import Epoch
from tests.airflow.conftest import PipelineUnderTest
from tests.airflow_server import AirflowServer


def table_uri(pipe: PipelineUnderTest) -> str:
    return f"hbase://eo_hbase/default/{pipe.spec.hbase_table}"


def asset_events(pipe: PipelineUnderTest) -> list[tuple[str, str, dict[str, Any]]]:
    """``(source_dag_id, source_task_id, extra)`` of every event of the pipeline's table asset."""
    db = sqlite3.connect(pipe.runner.home / "airflow.db")
    try:
        rows = db.execute(
            "SELECT e.source_dag_id, e.source_task_id, e.extra FROM asset_event e"
            " JOIN asset a ON a.id = e.asset_id WHERE a.uri = ? AND a.name = ? ORDER BY e.id",
            (table_uri(pipe), table_uri(pipe)),
        ).fetchall()
    finally:
        db.close()
    return [(dag, task, json.loads(extra)) for dag, task, extra in rows]


def served_asset_events(server: AirflowServer, dag_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    """``(source_dag_id, source_task_id, extra)`` of every Asset event ``dag_id``'s tasks
    emitted, oldest first, as the real Airflow REST API lists them."""
    answer = server.api("GET", f"assets/events?source_dag_id={quote(dag_id)}&limit=100")
    found = sorted(answer["asset_events"], key=lambda event: event["id"])
    return [(e["source_dag_id"], e["source_task_id"], e["extra"]) for e in found]


def expected_extra(epoch: Epoch) -> dict[str, Any]:
    assert epoch.committed_at is not None and epoch.written_at is not None
    return {
        "epoch_id": epoch.epoch_id,
        "pipeline": epoch.pipeline,
        "kind": epoch.kind.value,
        "state": "COMMITTED",
        "dag_id": epoch.dag_id,
        "run_id": epoch.run_id,
        "ranges": [
            {
                "topic": r.topic,
                "partition": r.partition,
                "start": r.start,
                "end": r.end,
                "records": r.end - r.start,
            }
            for r in epoch.ranges
        ],
        "records_total": sum(r.end - r.start for r in epoch.ranges),
        "metrics": epoch.metrics,
        "error": None,
        "created_at": epoch.created_at.isoformat(),
        "written_at": epoch.written_at.isoformat(),
        "committed_at": epoch.committed_at.isoformat(),
        "aborted_at": None,
        "bad_records": (epoch.metrics or {})["bad_records"],
    }
