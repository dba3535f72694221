"""The part of an Airflow task context that the provider's operators read, for tests that
call ``execute(context)`` directly (a run Airflow itself does not know)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def task_context(run_id: str = "run-1", dag_id: str = "eo_stream", **extra: Any) -> dict[str, Any]:
    """``{"ti": ..., "params": ...}``: a stand-in ``ti`` with ``dag_id``, ``run_id``,
    ``task_id="t"`` and ``try_number=1``; ``params`` (default ``{}``) and any other keyword
    (an extra ``ti`` attribute) come from ``extra``."""
    params = extra.pop("params", {})
    ti = SimpleNamespace(dag_id=dag_id, run_id=run_id, task_id="t", try_number=1, **extra)
    return {"ti": ti, "params": params}
