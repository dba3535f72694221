"""The Epochs page's chart series as JSON (``GET /api/pipelines/{name}/charts``), read by
:meth:`LedgerReads.pipeline_charts` in one transaction and bounded by :mod:`.chart_window`.

A pipeline the caller may not see is "not found", exactly as one the ledger does not know.
Import-light (no FastAPI, no Airflow): the plugin module is imported by every component.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_eo.ledger.model.chart_figures import EpochPoint, StoredSample
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.ledger.model.refusals import PipelineNotFound
from airflow_provider_eo.plugins.chart_window import (
    MAX_EPOCH_POINTS,
    MAX_LAG_PARTITIONS,
    MAX_LAG_SAMPLES,
    ChartWindow,
)

if TYPE_CHECKING:
    from airflow_provider_eo.plugins.access import PipelineAccess


def records_per_second(point: EpochPoint) -> float | None:
    """Records read per second of the epoch's Spark job (one decimal); None when either is
    unknown or the job took no measurable time."""
    seconds = point.times.spark_tasks_s
    if point.records is None or not seconds:
        return None
    return round(point.records / seconds, 1)


def epoch_json(point: EpochPoint) -> dict[str, Any]:
    """One epoch of the charts: ids, ``records``, ``records_per_s``, ``dead_letters``,
    ``duration_s`` (reservation to commit) and its ``phases`` (``ledger/model/phases.py``)."""
    committed = point.times.committed_at
    return {
        "epoch_id": point.epoch_id,
        "kind": point.kind,
        "committed_at": None if committed is None else committed.isoformat(),
        "records": point.records,
        "records_per_s": records_per_second(point),
        "dead_letters": point.dead_letters,
        "duration_s": point.times.duration_s,
        "phases": point.times.phases(),
    }


def sample_json(sample: StoredSample) -> dict[str, Any]:
    """One lag sample: its header and the rows of the shown partitions."""
    return {
        "sample_id": sample.sample_id,
        "at": sample.sampled_at.isoformat(),
        "source": sample.source,
        "epoch_id": sample.epoch_id,
        "total_lag": sample.total_lag,
        "partitions": [
            {"topic": p.topic, "partition": p.partition, "cursor": p.cursor,
             "high_watermark": p.high_watermark, "lag": p.lag}
            for p in sample.shown
        ],
    }  # fmt: skip


def charts(
    ledger: LedgerReads,
    pipeline: str,
    window: ChartWindow,
    access: PipelineAccess,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The series of ``pipeline`` over ``window`` (time windows end at ``now``, default the
    current time), in one ledger transaction. Raises ``PipelineNotFound`` for an unknown
    pipeline and, alike, for one the caller may not see."""
    if pipeline not in access.visible([pipeline]):
        raise PipelineNotFound(pipeline)
    found = ledger.pipeline_charts(
        pipeline,
        since=window.since(now or datetime.now(UTC)),
        last=window.last_epochs,
        max_epochs=MAX_EPOCH_POINTS,
        max_samples=MAX_LAG_SAMPLES,
        max_partitions=MAX_LAG_PARTITIONS,
    )
    lag = found.lag
    return {
        "pipeline": pipeline,
        "window": window.text,
        "since": found.since.isoformat(),
        "until": found.until.isoformat(),
        "epochs": [epoch_json(point) for point in found.epochs],
        "epochs_in_window": found.epochs_in_window,
        "lag": {
            "samples": [sample_json(sample) for sample in lag.samples],
            "samples_in_window": lag.in_window,
            "every": lag.every,
            "partitions": lag.partitions,
            "partitions_shown": [{"topic": t, "partition": p} for t, p in lag.shown_partitions],
        },
    }
