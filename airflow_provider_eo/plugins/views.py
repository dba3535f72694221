"""JSON views of the ledger for the UI plugin: the same typed queries as ``eo-ledger``.

Every function takes the ledger's read model
(:class:`~airflow_provider_eo.ledger.model.ledger_roles.LedgerReads`) and the caller's
:class:`~airflow_provider_eo.plugins.access.PipelineAccess`, and returns JSON-ready data
from :mod:`airflow_provider_eo.ledger.model.read_model` (``PipelineOverview.to_json``,
``Epoch.to_summary``, ``Transition.to_json``), so the UI and ``eo-ledger pipelines`` /
``epochs`` / ``epoch`` always agree. A pipeline the caller may not see is absent from every answer, as if it
did not exist (its epochs are "not found"). Pipelines carry their lag per partition
(:mod:`.partition_lag`). Import-light (no FastAPI, no Airflow, no Kafka client): the plugin module
is imported by every Airflow component.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from airflow_provider_eo.ledger.model.history import epoch_detail
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.refusals import EpochNotFound, PipelineNotFound
from airflow_provider_eo.plugins.partition_lag import (
    WatermarkSource,
    pipeline_partitions,
    read_high_watermarks,
    with_lag,
)

if TYPE_CHECKING:
    from airflow_provider_eo.plugins.access import PipelineAccess

DEFAULT_EPOCH_LIMIT = 50
MAX_EPOCH_LIMIT = 1000
DEFAULT_AUDIT_LIMIT = 20
MAX_AUDIT_LIMIT = 500


def pipelines(
    ledger: LedgerReads, access: PipelineAccess, watermarks: WatermarkSource | None
) -> list[dict[str, Any]]:
    """``eo-ledger pipelines`` (the visible pipelines, sorted by name) in one ledger
    transaction, with lag from one ``watermarks`` call.

    Each item: ``name``, ``epochs`` (count per state), ``open_epochs``, ``cursors`` (each
    with ``high_watermark`` and ``lag``), ``dead_letters`` (count), ``gaps``,
    ``total_lag`` and ``lag_error``.
    """
    overviews = ledger.pipeline_overviews()
    visible = access.visible(overview.name for overview in overviews)
    shown = [overview.to_json() for overview in overviews if overview.name in visible]
    highs = read_high_watermarks(watermarks, pipeline_partitions(shown))
    return [with_lag(pipeline, highs) for pipeline in shown]


def _check_limit(wanted: EpochFilter) -> None:
    if wanted.limit is None or not 1 <= wanted.limit <= MAX_EPOCH_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_EPOCH_LIMIT}, got {wanted.limit}")


def _narrowed(wanted: EpochFilter, access: PipelineAccess, candidates: list[str]) -> EpochFilter:
    """``wanted`` restricted to the visible ones of ``candidates`` (unchanged if unrestricted)."""
    return replace(wanted, pipelines=access.visible(candidates)) if access.restricted else wanted


def epochs(ledger: LedgerReads, wanted: EpochFilter, access: PipelineAccess) -> list[dict[str, Any]]:
    """``eo-ledger epochs --limit N``: the newest ``wanted.limit`` matching epochs of visible
    pipelines, oldest first (one ledger transaction, two when access is restricted and no
    pipeline is named).

    ``wanted.limit`` must be in ``1..MAX_EPOCH_LIMIT`` (``ValueError`` otherwise, None
    included); each item is ``Epoch.to_summary()`` (ranges ``[start, end)``, record
    counts, metrics, error, times).
    """
    _check_limit(wanted)
    if access.restricted:
        candidates = [wanted.pipeline] if wanted.pipeline is not None else ledger.list_pipelines()
        wanted = _narrowed(wanted, access, candidates)
    return [epoch.to_summary() for epoch in ledger.epochs(wanted)]


def page_data(
    ledger: LedgerReads, wanted: EpochFilter, access: PipelineAccess, watermarks: WatermarkSource | None
) -> dict[str, Any]:
    """What the HTML page shows, in three ledger transactions and at most one watermarks
    call, whatever the number of pipelines and epochs.

    ``pipeline_names`` (every visible pipeline, for the filter), ``pipelines`` (the
    overview of ``wanted.pipeline``, or of every visible pipeline, with lag), ``epochs``
    (:func:`epochs`), ``histories`` (epoch id -> its transitions, oldest first, each
    ``Transition.to_json``), ``audits`` (epoch id -> its newest kept audit, for the badge:
    ``{audit_id, verdict, epoch_findings, finished_at}``; epochs never audited absent, one
    statement whatever the number of epochs) and ``lag_error`` (None, or why lag is unknown).
    """
    _check_limit(wanted)
    overviews = ledger.pipeline_overviews()
    names = [overview.name for overview in overviews]
    visible = access.visible(names)
    shown = [
        overview.to_json()
        for overview in overviews
        if overview.name in visible and wanted.pipeline in (None, overview.name)
    ]
    highs = read_high_watermarks(watermarks, pipeline_partitions(shown))
    found = ledger.epochs(_narrowed(wanted, access, names))
    histories = ledger.histories([e.epoch_id for e in found])
    audits = ledger.epoch_audits([e.epoch_id for e in found])
    return {
        "pipeline_names": [name for name in names if name in visible],
        "pipelines": [with_lag(pipeline, highs) for pipeline in shown],
        "epochs": [e.to_summary() for e in found],
        "histories": {epoch_id: [t.to_json() for t in rows] for epoch_id, rows in histories.items()},
        "audits": {epoch_id: badge.to_json() for epoch_id, badge in audits.items()},
        "lag_error": highs.error,
    }


def epoch(ledger: LedgerReads, epoch_id: int, access: PipelineAccess) -> dict[str, Any]:
    """``eo-ledger epoch ID``: ``Epoch.to_summary`` plus ``history`` (oldest first); raises
    ``EpochNotFound`` for an unknown id and, alike, for an epoch of a pipeline the caller
    may not see (its existence is not revealed)."""
    found = ledger.get_epoch(epoch_id)
    if found.pipeline not in access.visible([found.pipeline]):
        raise EpochNotFound(epoch_id)
    return epoch_detail(found.to_summary(), found.spec_digest, ledger.history(epoch_id))


def recorded_spec(ledger: LedgerReads, digest: str, access: PipelineAccess) -> dict[str, Any] | None:
    """``eo-ledger spec DIGEST``: ``{digest, spec}``; None for a digest the ledger does not hold
    or whose pipeline the caller may not see (its existence is not revealed)."""
    spec = ledger.pipeline_spec(digest)
    if spec is None or spec["name"] not in access.visible([spec["name"]]):
        return None
    return {"digest": digest, "spec": spec}


def epoch_page_data(ledger: LedgerReads, epoch_id: int, access: PipelineAccess) -> dict[str, Any]:
    """What an epoch's page shows: :func:`epoch` (raising as it does) plus ``duration_s``
    and ``phases`` (``ledger/model/phases.py``; None where unknown) and
    ``lag_after_commit``: its commit lag sample (``{"at", "partitions": [{topic,
    partition, cursor, high_watermark, lag}]}``) or None; ``audit``: its newest kept audit
    (``EpochAudit.to_json``, the Epochs page's badge) or None."""
    shown = epoch(ledger, epoch_id, access)
    point = ledger.epoch_point(epoch_id)
    sample = ledger.epoch_lag_sample(epoch_id)
    lag = None
    if sample is not None:
        at, partitions = sample
        lag = {"at": at.isoformat(), "partitions": [asdict(p) for p in partitions]}
    return {
        **shown,
        "duration_s": point.times.duration_s,
        "phases": point.times.phases(),
        "lag_after_commit": lag,
        "audit": newest.to_json() if (newest := ledger.epoch_audits([epoch_id]).get(epoch_id)) else None,
    }


def audit(ledger: LedgerReads, audit_id: int, access: PipelineAccess) -> dict[str, Any] | None:
    """``eo-ledger audit-show ID``: ``AuditRecord.to_json()`` with its kept findings; None for
    an unknown id and, alike, for an audit of a pipeline the caller may not see."""
    found = ledger.audit(audit_id)
    if found is None or found.pipeline not in access.visible([found.pipeline]):
        return None
    return found.to_json()


def pipeline_audits(
    ledger: LedgerReads, pipeline: str, access: PipelineAccess, limit: int
) -> list[dict[str, Any]]:
    """``eo-ledger audits --pipeline P --limit N``: the ``limit`` newest audits, newest first,
    without findings (``AuditRecord.brief``). Raises ``PipelineNotFound`` for a pipeline
    the ledger lacks and, alike, for one the caller may not see; ``ValueError`` for a
    ``limit`` outside ``1..MAX_AUDIT_LIMIT``."""
    if not 1 <= limit <= MAX_AUDIT_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_AUDIT_LIMIT}, got {limit}")
    if pipeline not in access.visible([pipeline]) or pipeline not in ledger.list_pipelines():
        raise PipelineNotFound(pipeline)
    return [record.brief() for record in ledger.audits(pipeline, limit)]
