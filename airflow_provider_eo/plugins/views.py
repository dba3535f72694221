"""JSON views of the ledger for the UI plugin: the same typed queries as ``eo-ledger``.

Every function takes an open :class:`~airflow_provider_eo.ledger.Ledger` and returns
JSON-ready data from :mod:`airflow_provider_eo.ledger.store.queries` (``PipelineOverview.to_json``,
``Epoch.to_detail``), so the UI and ``eo-ledger pipelines`` / ``epochs`` / ``epoch``
always agree. Import-light (no FastAPI, no Airflow): the plugin module is imported by
every Airflow component.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_eo.ledger.store.ledger import Ledger
from airflow_provider_eo.ledger.store.queries import EpochFilter

STREAM_DAG_PREFIX = "eo_stream__"
BACKFILL_DAG_PREFIX = "eo_backfill__"
DEFAULT_EPOCH_LIMIT = 50
MAX_EPOCH_LIMIT = 1000


def pipelines(ledger: Ledger, pipeline: str | None = None) -> list[dict[str, Any]]:
    """``eo-ledger pipelines`` (all pipelines, sorted by name; only ``pipeline`` if given),
    in one ledger transaction.

    Each item: ``name``, ``epochs`` (count per state), ``open_epochs``, ``cursors``,
    ``dead_letters`` (count) and ``gaps``.
    """
    return [overview.to_json() for overview in ledger.pipeline_overviews(pipeline)]


def epochs(ledger: Ledger, wanted: EpochFilter) -> list[dict[str, Any]]:
    """``eo-ledger epochs --limit N``: the newest ``wanted.limit`` matching epochs, oldest
    first, in one ledger transaction.

    ``wanted.limit`` must be in ``1..MAX_EPOCH_LIMIT`` (``ValueError`` otherwise, None
    included); each item is ``Epoch.to_detail()`` (ranges ``[start, end)``, record
    counts, metrics, error, times).
    """
    if wanted.limit is None or not 1 <= wanted.limit <= MAX_EPOCH_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_EPOCH_LIMIT}, got {wanted.limit}")
    return [epoch.to_detail() for epoch in ledger.epochs(wanted)]


def page_data(ledger: Ledger, wanted: EpochFilter) -> dict[str, Any]:
    """What the HTML page shows, in two ledger transactions whatever the number of pipelines.

    ``pipeline_names`` (every pipeline, for the filter), ``pipelines`` (the overview of
    ``wanted.pipeline``, or of every pipeline) and ``epochs`` (:func:`epochs`).
    """
    overviews = ledger.pipeline_overviews()
    return {
        "pipeline_names": [overview.name for overview in overviews],
        "pipelines": [
            overview.to_json()
            for overview in overviews
            if wanted.pipeline is None or overview.name == wanted.pipeline
        ],
        "epochs": epochs(ledger, wanted),
    }


def epoch(ledger: Ledger, epoch_id: int) -> dict[str, Any]:
    """``eo-ledger epoch ID``; raises ``EpochNotFound`` for an unknown id."""
    return ledger.get_epoch(epoch_id).to_detail()


def pipeline_from_dag_id(dag_id: str | None) -> str | None:
    """``eo_stream__<p>`` / ``eo_backfill__<p>`` -> ``<p>``; None for any other DAG id."""
    for prefix in (STREAM_DAG_PREFIX, BACKFILL_DAG_PREFIX):
        if dag_id and dag_id.startswith(prefix) and len(dag_id) > len(prefix):
            return dag_id[len(prefix) :]
    return None
