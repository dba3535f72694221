"""OpenLineage in the session's real Airflow (tests/airflow_server.py): its settings, and the
events read back.

The session's Airflow runs ``apache-airflow-providers-openlineage`` with its **file
transport**: every event is one JSON line appended to the session's events file. Its
emission policy keeps the cost to the tests of lineage: only the write and commit tasks
(``write``, ``commit``, ``chunk.write``, ``chunk.commit``) of the pipelines whose name ends in
:data:`LINEAGE_MARK` emit (a START and a COMPLETE each); every other task and every DAG-run
event is off, so no other task forks the listener's emitting process (its START event
costs an emitting task 0.2-0.5 s before ``execute``, measured on the shared 2-core machine at
load averages of 10 to 17; the COMPLETE event comes after Airflow has the task's success).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

#: The end of the name of a pipeline whose write and commit tasks emit OpenLineage events.
LINEAGE_MARK = "_ol"


def lineage_pipeline(name: str) -> str:
    """``name`` as a pipeline whose write and commit tasks emit OpenLineage events."""
    return f"{name}{LINEAGE_MARK}"


def openlineage_settings(events_file: Path) -> dict[str, str]:
    """The ``AIRFLOW__OPENLINEAGE__*`` settings: file transport appending to ``events_file``;
    events of the write and commit tasks of :func:`lineage_pipeline` pipelines only."""
    policy = [
        {"scope": {}, "controls": {"emit": False}},
        {
            "scope": {
                "dag_id": f"eo_(stream|backfill)__.+{LINEAGE_MARK}",
                "task_id": r"(chunk\.)?(write|commit)",
            },
            "match_mode": "regex",
            "controls": {"emit": True},
        },
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
