"""Typed answers of the UI plugin's JSON API: the OpenAPI schema of ``/eo/api/*``.

Each model mirrors, field for field, a JSON form the ledger already produces
(``Epoch.to_summary``, ``PipelineOverview.to_json``) plus the lag fields of
:mod:`.partition_lag`; the routes of :mod:`.app` declare them as ``response_model`` so
``/eo/api/openapi.json`` describes every field, and FastAPI checks each answer
against them (tests/unit/test_epoch_summary.py holds each model to its JSON form's keys).
A gap is the ledger's own :class:`~airflow_provider_eo.ledger.model.read_model.Gap`
dataclass (pydantic validates it with the enclosing model's config). Timestamps stay the
ledger's ISO-8601 strings (``datetime.isoformat``), exactly what ``eo-ledger`` prints.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from airflow_provider_eo.ledger.model.read_model import Gap
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState

_DATE_TIME: JsonDict = {"format": "date-time"}
Timestamp = Annotated[str, Field(json_schema_extra=_DATE_TIME)]
"""An ISO-8601 timestamp as ``datetime.isoformat`` writes it."""


class Answer(BaseModel):
    """Base of every answer: no field beyond those declared, immutable, enums as their values."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=True)


class EpochCounts(Answer):
    """Number of epochs of a pipeline in each state (every state present, zero included)."""

    RESERVED: int
    WRITTEN: int
    COMMITTED: int
    ABORTED: int


class OpenEpoch(Answer):
    """A RESERVED or WRITTEN epoch of a pipeline."""

    epoch_id: int
    kind: EpochKind
    state: EpochState
    run_id: str = Field(description="run id of the Airflow run that reserved it")


class PartitionLag(Answer):
    """One pinned partition of a pipeline: its cursor and how far the topic is ahead of it."""

    topic: str
    partition: int
    cursor: int = Field(description="next stream offset: where the next stream epoch starts")
    high_watermark: int | None = Field(
        description="the partition's last stable offset (read_committed); null when unknown"
    )
    lag: int | None = Field(description="max(high_watermark - cursor, 0); null when unknown")


class Pipeline(Answer):
    """One pipeline at a glance (``eo-ledger pipelines``) with its lag per partition."""

    name: str
    epochs: EpochCounts
    open_epochs: list[OpenEpoch] = Field(description="RESERVED/WRITTEN epochs, by id")
    cursors: list[PartitionLag] = Field(description="every pinned partition, by topic and partition")
    dead_letters: int = Field(description="number of dead letters")
    gaps: list[Gap]
    total_lag: int | None = Field(description="sum of the partitions' lag; null if any is unknown")
    lag_error: str | None = Field(
        description="why lag is unknown (Kafka unreadable, or partitions not found in Kafka), else null"
    )


class PartitionRange(Answer):
    """Offsets ``[start, end)`` of one topic-partition in an epoch (``PartitionRange.to_summary``)."""

    topic: str
    partition: int
    start: int
    end: int
    records: int = Field(description="end - start")


class Epoch(Answer):
    """One epoch with its ranges (``Epoch.to_summary``, as ``eo-ledger epoch`` prints it);
    no fencing token."""

    epoch_id: int
    pipeline: str
    kind: EpochKind
    state: EpochState
    dag_id: str
    run_id: str
    ranges: list[PartitionRange]
    records_total: int = Field(description="offsets covered by all ranges")
    metrics: dict[str, Any] | None = Field(description="the write step's vote (WRITTEN and later)")
    error: str | None = Field(description="abort reason or failure")
    created_at: Timestamp
    written_at: Timestamp | None
    committed_at: Timestamp | None
    aborted_at: Timestamp | None


class Transition(Answer):
    """One state change of an epoch (``Transition.to_json``, as ``eo-ledger epoch`` prints it)."""

    from_: EpochState | None = Field(alias="from", description="the state before; null: the epoch's creation")
    to: EpochState = Field(description="the state after")
    at: Timestamp
    actor_kind: str = Field(description="task | eo-ledger | recovery | process | migration")
    actor: str = Field(description="dag/run/task try N, user@host, ...")
    reason: str


class EpochDetail(Epoch):
    """One epoch with its ranges, mapping digest and ``history`` (``eo-ledger epoch ID``)."""

    spec_digest: str | None = Field(
        description="sha256 of the mapping it was reserved with (GET /api/specs/{digest}); "
        "null for epochs reserved before the ledger recorded it"
    )
    history: list[Transition] = Field(description="its state changes, oldest first (its creation first)")


class RecordedSpec(Answer):
    """The pipeline spec the ledger recorded under a mapping digest (``eo-ledger spec DIGEST``)."""

    digest: str = Field(description="sha256 of the spec's mapping (config/spec_digest.py)")
    spec: dict[str, Any] = Field(description="the parsed spec as first reserved (PipelineSpec.to_dict())")


class AuditFinding(BaseModel):
    """One kept finding of an audit (``audit/findings.py``, ``Finding.to_json``); fields that
    do not apply are null. Keys a finding of another provider version carries are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str = Field(description="cell_missing, cell_bytes_differ, unexpected_cell, ... (docs/audit.md)")
    detail: str = Field(description="the finding in words")
    epoch_id: int | None
    topic: str | None
    partition: int | None
    offset: int | None
    row: str | None = Field(description="row key (text; at most 40 bytes shown)")
    column: str | None = Field(description="family:qualifier")
    expected_version: int | None = Field(description="the cell version the committed record maps to")
    expected_bytes: str | None = Field(description="the bytes it maps to (at most 40 shown)")
    hbase_holds: str | None = Field(description="what HBase (or the ledger) holds instead")


class Audit(Answer):
    """A kept audit without its findings (``AuditRecord.brief``; ``eo-ledger audits``)."""

    audit_id: int
    pipeline: str
    run_key: str | None = Field(description="<dag_id>/<run_id> of the audit DAG's run; null from eo-ledger")
    source: str = Field(description="dag | cli")
    first_epoch: int
    last_epoch: int
    epochs: int = Field(description="committed epochs audited")
    epoch_ids: list[int] = Field(description="the audited epochs, by id")
    verdict: str = Field(description="clean | discrepancies")
    findings_total: int = Field(description="every finding counted, kept or not")
    summary: dict[str, Any] = Field(
        description="the report's counts: window, offsets, cells, not_auditable, findings_by_kind, "
        "findings_not_shown, ..."
    )
    started_at: Timestamp
    finished_at: Timestamp


class AuditDetail(Audit):
    """A kept audit with its findings (``eo-ledger audit-show ID``)."""

    findings: list[AuditFinding] = Field(description="the kept findings (at most 1,000), in order found")


class ErrorBody(Answer):
    """An error of the plugin's routes, as the CLI prints it."""

    error: str = Field(description="what went wrong")
    type: str = Field(
        description="EpochNotFound, PipelineNotFound, AuditNotFound, InvalidRequest, LedgerUnavailable "
        "or InternalError"
    )


class AuthErrorBody(BaseModel):
    """Airflow's answer to a missing (401) or invalid (403) token."""

    detail: str


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": AuthErrorBody, "description": "no Airflow token or session cookie"},
    403: {"model": AuthErrorBody, "description": "invalid Airflow token"},
    422: {"model": ErrorBody, "description": "invalid query (type InvalidRequest)"},
    500: {"model": ErrorBody, "description": "a bug, logged with its traceback (type InternalError)"},
    503: {"model": ErrorBody, "description": "ledger unreachable (type LedgerUnavailable)"},
}
NOT_FOUND_RESPONSE: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "no such epoch, or one the caller may not see (EpochNotFound)"},
}
PIPELINE_NOT_FOUND_RESPONSE: dict[int | str, dict[str, Any]] = {
    404: {
        "model": ErrorBody,
        "description": "no such pipeline, or one the caller may not see (PipelineNotFound)",
    },
}
AUDIT_NOT_FOUND_RESPONSE: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "no such audit, or one the caller may not see (AuditNotFound)"},
}
PAGE_RESPONSES: dict[int | str, dict[str, Any]] = {
    **{status: ERROR_RESPONSES[status] for status in (401, 403, 422)},
    500: {"description": "a page naming the error's class (a bug, logged)", "content": {"text/html": {}}},
    503: {"description": "the page, with the ledger error in a banner", "content": {"text/html": {}}},
}
