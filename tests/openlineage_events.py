"""OpenLineage in the session's real Airflow (tests/airflow_server.py): its settings, and the
events read back.

The session's Airflow runs ``apache-airflow-providers-openlineage`` with its **file
transport**: every event is one JSON line appended to the session's events file. The
emission policy keeps the cost to the tasks under test: events of the provider's write and
commit operators only (a START and a COMPLETE per task instance); every other task and
every DAG-run event is off, so no other task forks the listener's emitting process.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

#: The operators whose task events the session's Airflow emits.
LINEAGE_OPERATORS = (
    "airflow_provider_eo.operators.write.WriteEpochOperator",
    "airflow_provider_eo.operators.backfill_chunks.WriteBackfillChunkOperator",
    "airflow_provider_eo.operators.commit.CommitEpochOperator",
)


def openlineage_settings(events_file: Path) -> dict[str, str]:
    """The ``AIRFLOW__OPENLINEAGE__*`` settings: file transport appending to ``events_file``,
    events of :data:`LINEAGE_OPERATORS` only."""
    policy = [{"scope": {}, "controls": {"emit": False}}] + [
        {"scope": {"operator": operator}, "controls": {"emit": True}} for operator in LINEAGE_OPERATORS
    ]
    transport = {"type": "file", "log_file_path": str(events_file), "append": True}
    return {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        "AIRFLOW__OPENLINEAGE__EMISSION_POLICY": json.dumps(policy),
    }


def read_events(events_file: Path, dag_id: str) -> list[dict[str, Any]]:
    """The events of ``dag_id``'s tasks (job name ``<dag_id>.<task_id>``), in the file's order."""
    if not events_file.exists():
        return []
    events = [json.loads(line) for line in events_file.read_text().splitlines() if line.strip()]
    return [e for e in events if e["job"]["name"].startswith(f"{dag_id}.")]


def wait_for_events(events_file: Path, dag_id: str, count: int, timeout: float) -> list[dict[str, Any]]:
    """:func:`read_events` once it has at least ``count`` events; ``TimeoutError`` (naming what it
    has) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while len(events := read_events(events_file, dag_id)) < count:
        if time.monotonic() > deadline:
            seen = [(e["eventType"], e["job"]["name"]) for e in events]
            raise TimeoutError(
                f"{events_file}: {len(events)} of {count} events of {dag_id} after {timeout} s: {seen}"
            )
        time.sleep(0.2)
    return events
