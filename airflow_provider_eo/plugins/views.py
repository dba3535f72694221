"""JSON views of the ledger for the UI plugin: the ``eo-ledger`` CLI's answers, reused.

Every function takes an open :class:`~airflow_provider_eo.ledger.Ledger` and returns
JSON-ready data built by :mod:`airflow_provider_eo.ledger.cli_commands`, so the UI
and ``eo-ledger pipelines`` / ``epochs`` / ``epoch`` always agree. Import-light (no
FastAPI, no Airflow): the plugin module is imported by every Airflow component.
"""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_eo.ledger import cli_commands
from airflow_provider_eo.ledger.ledger import Ledger

STREAM_DAG_PREFIX = "eo_stream__"
BACKFILL_DAG_PREFIX = "eo_backfill__"
DEFAULT_EPOCH_LIMIT = 50
MAX_EPOCH_LIMIT = 1000


def pipelines(ledger: Ledger, pipeline: str | None = None) -> list[dict[str, Any]]:
    """``eo-ledger pipelines`` (all pipelines, sorted by name; only ``pipeline`` if given).

    Each item: ``name``, ``epochs`` (count per state), ``open_epochs``, ``cursors``,
    ``dead_letters`` (count) and ``gaps``.
    """
    found = cli_commands.pipelines(ledger)
    return [p for p in found if pipeline is None or p["name"] == pipeline]


def epochs(
    ledger: Ledger,
    *,
    pipeline: str | None = None,
    state: str | None = None,
    kind: str | None = None,
    limit: int = DEFAULT_EPOCH_LIMIT,
) -> list[dict[str, Any]]:
    """``eo-ledger epochs --limit N``: the newest ``limit`` matching epochs, oldest first.

    ``limit`` must be in ``1..MAX_EPOCH_LIMIT`` (``ValueError`` otherwise); each item is
    ``Epoch.to_detail()`` (ranges ``[start, end)``, record counts, metrics, error, times).
    """
    if not 1 <= limit <= MAX_EPOCH_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_EPOCH_LIMIT}, got {limit}")
    args = argparse.Namespace(
        pipeline=pipeline, state=state, kind=kind, min_id=None, max_id=None, limit=limit
    )
    return cli_commands.epochs(ledger, args)


def epoch(ledger: Ledger, epoch_id: int) -> dict[str, Any]:
    """``eo-ledger epoch ID``; raises ``EpochNotFound`` for an unknown id."""
    return ledger.get_epoch(epoch_id).to_detail()


def pipeline_from_dag_id(dag_id: str | None) -> str | None:
    """``eo_stream__<p>`` / ``eo_backfill__<p>`` -> ``<p>``; None for any other DAG id."""
    for prefix in (STREAM_DAG_PREFIX, BACKFILL_DAG_PREFIX):
        if dag_id and dag_id.startswith(prefix) and len(dag_id) > len(prefix):
            return dag_id[len(prefix) :]
    return None
