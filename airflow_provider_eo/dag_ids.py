"""The DAG ids the provider gives a pipeline: its stream DAG, its backfill DAG, its audit DAG, and the one
recovery DAG shared by every pipeline. Import-free, so the DAG factory, the UI plugin and
its access rule all read them from here."""

from __future__ import annotations

STREAM_DAG_PREFIX = "eo_stream__"
BACKFILL_DAG_PREFIX = "eo_backfill__"
AUDIT_DAG_PREFIX = "eo_audit__"
RECOVERY_DAG_ID = "eo_recovery"
#: The backfill DAG's mapped task group: one ``chunk.write`` / ``chunk.commit`` per chunk.
CHUNK_GROUP_ID = "chunk"


def stream_dag_id(pipeline: str) -> str:
    """``<p>`` -> ``eo_stream__<p>``: the DAG of a pipeline's stream epochs."""
    return f"{STREAM_DAG_PREFIX}{pipeline}"


def backfill_dag_id(pipeline: str) -> str:
    """``<p>`` -> ``eo_backfill__<p>``: the DAG of a pipeline's backfill epochs."""
    return f"{BACKFILL_DAG_PREFIX}{pipeline}"


def audit_dag_id(pipeline: str) -> str:
    """``<p>`` -> ``eo_audit__<p>``: the DAG that audits a pipeline's committed epochs."""
    return f"{AUDIT_DAG_PREFIX}{pipeline}"


def pipeline_from_dag_id(dag_id: str | None) -> str | None:
    """``eo_stream__<p>`` / ``eo_backfill__<p>`` -> ``<p>``; None for any other DAG id."""
    for prefix in (STREAM_DAG_PREFIX, BACKFILL_DAG_PREFIX):
        if dag_id and dag_id.startswith(prefix) and len(dag_id) > len(prefix):
            return dag_id[len(prefix) :]
    return None
