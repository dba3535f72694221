"""The ledger by role: the narrow interfaces its callers depend on (``typing.Protocol``).

Each caller names the role it plays, not the PostgreSQL class
(:class:`~airflow_provider_eo.ledger.store.postgres_ledger.Ledger` implements every role, and
smaller classes of ``ledger/store/`` implement one each):

========================== ==============================================================
:class:`ScriptTransactions` one transaction for a multi-statement script of the protocol
                           (reservations, seek, replay reads, the dead-letter publication)
:class:`ProtocolStore`     what the epoch protocol calls (``EpochProtocol``, ``CommitPath``,
                           ``OperatorTools``): the guarded transitions, the epochs they read,
                           who acts, the commit's lag sample
:class:`LedgerReads`       the read model of the ``eo-ledger`` CLI and the Epochs UI (with
                           :class:`AuditReads`, the kept audits read back)
:class:`LedgerAdministration` migrations and retention (``eo-ledger migrate`` / ``prune``)
:class:`DeadLetterRecords` where a Spark task stores its dead letters
:class:`LedgerObservations` what is observed beside the state machine: lag samples, dead letters
:class:`AuditResults`      the kept audits: stored by the audit DAG and the CLI
========================== ==============================================================

The interfaces live with the values (``ledger/model/``) so that every layer above the
store may name them and none imports the store to do so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.audit_record import AuditRecord, EpochAudit
from airflow_provider_eo.ledger.model.chart_figures import EpochPoint, PipelineCharts
from airflow_provider_eo.ledger.model.epoch import DeadLetter, Epoch
from airflow_provider_eo.ledger.model.history import HistoryEvent, Transition
from airflow_provider_eo.ledger.model.lag import LagSampleSink, SampledPartition
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.read_model import EpochFilter, PipelineOverview
from airflow_provider_eo.ledger.model.retention_policy import PruneCount, PrunePolicy
from airflow_provider_eo.ledger.model.states import EpochKind


class ScriptTransactions(Protocol):
    """Runs the protocol's multi-statement transaction scripts."""

    def transaction(self) -> AbstractContextManager[Any]:
        """One transaction: a psycopg2 cursor, committed when the block ends normally,
        rolled back when it raises. Raises ``LedgerUnavailable`` when the store cannot be
        reached."""
        ...


class ProtocolStore(ScriptTransactions, LagSampleSink, Protocol):
    """What the epoch protocol calls: each transition is one guarded, idempotent change
    of the state machine (``states.TRANSITIONS``) recorded as :attr:`actor`'s."""

    @property
    def actor(self) -> Actor:
        """Who the changes are recorded as (``eo.epoch_transitions``)."""
        ...

    def acting_as(self, actor: Actor) -> AbstractContextManager[Actor]:
        """Record the changes made inside the block as ``actor``'s, then restore the previous one."""
        ...

    def get_epoch(self, epoch_id: int) -> Epoch:
        """The epoch with its ranges; raises ``EpochNotFound``."""
        ...

    def open_epochs(self, pipeline: str, kind: EpochKind | str | None = None) -> list[Epoch]:
        """RESERVED and WRITTEN epochs of ``pipeline`` (of one kind if given), oldest first."""
        ...

    def vote_written(
        self,
        epoch_id: int,
        fencing_token: str,
        metrics: Mapping[str, Any] | None = None,
        spec_digest: str | None = None,
    ) -> Epoch:
        """RESERVED -> WRITTEN with ``metrics``, only with the epoch's fencing token (and its
        mapping when ``spec_digest`` is given); a repeated vote with the same token: the
        WRITTEN epoch, unchanged. Raises ``FencedOut`` (nothing changed) otherwise,
        ``EpochNotFound``."""
        ...

    def mark_committed(
        self, epoch_id: int, reason: str | None = None, *, step_seconds: float | None = None
    ) -> Epoch:
        """WRITTEN -> COMMITTED (a stream epoch's cursors move to its ends); COMMITTED:
        the epoch, unchanged. Raises ``IllegalTransition`` for RESERVED or ABORTED."""
        ...

    def abort(self, epoch_id: int, reason: str, *, allow_written: bool = False) -> Epoch:
        """RESERVED (WRITTEN too with ``allow_written``) -> ABORTED; ABORTED: the epoch,
        unchanged. Raises ``IllegalTransition`` otherwise (COMMITTED, or WRITTEN without
        ``allow_written``)."""
        ...


class AuditReads(Protocol):
    """The kept audits read back (docs/audit.md): the Epochs UI and ``eo-ledger audits``."""

    def audit(self, audit_id: int) -> AuditRecord | None:
        """One audit with its kept findings, or None."""
        ...

    def audit_of_run(self, run_key: str) -> AuditRecord | None:
        """The audit a run stored, with its kept findings, or None."""
        ...

    def audits(self, pipeline: str, limit: int = 50) -> list[AuditRecord]:
        """The pipeline's newest audits, newest first, without findings."""
        ...

    def epoch_audits(self, epoch_ids: Sequence[int]) -> dict[int, EpochAudit]:
        """Each epoch's newest audit; epochs never audited are absent (one statement)."""
        ...


class LedgerReads(AuditReads, Protocol):
    """The read model of the ``eo-ledger`` CLI and the Epochs UI: nothing here changes the
    ledger. Every read is one transaction."""

    def close(self) -> None:
        """Release the connection (the next read opens one)."""
        ...

    def __enter__(self) -> LedgerReads:
        """The read model itself; leaving the block closes it."""
        ...

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        ...

    def get_epoch(self, epoch_id: int) -> Epoch:
        """The epoch with its ranges; raises ``EpochNotFound``."""
        ...

    def epochs(self, wanted: EpochFilter) -> list[Epoch]:
        """Epochs matching ``wanted``, oldest first (with ``wanted.limit``: the newest ``limit``)."""
        ...

    def history(self, epoch_id: int) -> list[Transition]:
        """The epoch's transitions, oldest first; raises ``EpochNotFound``."""
        ...

    def histories(self, epoch_ids: Sequence[int]) -> dict[int, list[Transition]]:
        """The transitions of each epoch of ``epoch_ids``, oldest first."""
        ...

    def pipeline_history(self, pipeline: str, limit: int = 100) -> list[HistoryEvent]:
        """The ``limit`` newest transitions and cursor moves of ``pipeline``, newest first;
        raises ``LookupError`` (unknown pipeline), ``ValueError`` (``limit < 1``)."""
        ...

    def pipeline_overviews(self, pipeline: str | None = None) -> list[PipelineOverview]:
        """Every pipeline's overview (or only ``pipeline``'s; [] if unknown), sorted by name."""
        ...

    def list_pipelines(self) -> list[str]:
        """Names of the pipelines the ledger knows, sorted."""
        ...

    def cursors(self, pipeline: str) -> dict[TopicPartition, int]:
        """Next stream offset per pinned partition of ``pipeline``."""
        ...

    def gaps(self, pipeline: str) -> list[dict[str, Any]]:
        """Recorded data-loss gaps of ``pipeline`` (JSON-serializable)."""
        ...

    def dead_letter_count(self, pipeline: str, epoch_id: int | None = None) -> int:
        """Number of dead letters of ``pipeline`` (of one epoch if given)."""
        ...

    def list_dead_letters(self, pipeline: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Dead letters of ``pipeline`` as JSON-serializable dicts."""
        ...

    def dead_letter_offsets(
        self,
        pipeline: str,
        topic: str,
        partition: int,
        start: int,
        end: int,
        *,
        not_resolved_by: int | None = None,
    ) -> list[int]:
        """The offsets in ``[start, end)`` of ``topic``/``partition`` that ``pipeline`` holds a
        dead letter of (``not_resolved_by``: without those that replay epoch wrote), ascending (what
        the audit compares)."""
        ...

    def dead_letters_in_range(
        self, pipeline: str, topic: str, partition: int, start: int, end: int
    ) -> list[tuple[int | None, DeadLetter]]:
        """``(publish_seq or None, letter)`` of ``pipeline``'s dead letters in ``[start, end)``
        of one partition, by offset (the audit's dead-letter topic check)."""
        ...

    def pipeline_spec(self, digest: str) -> dict[str, Any] | None:
        """The spec recorded under a mapping digest (``PipelineSpec.to_dict()``'s view), or None."""
        ...

    def pipeline_charts(
        self,
        pipeline: str,
        *,
        since: datetime | None,
        last: int | None,
        max_epochs: int,
        max_samples: int,
        max_partitions: int,
    ) -> PipelineCharts:
        """A window of ``pipeline``'s committed epochs and lag samples; raises ``PipelineNotFound``."""
        ...

    def epoch_point(self, epoch_id: int) -> EpochPoint:
        """One epoch's figures; raises ``EpochNotFound``."""
        ...

    def epoch_lag_sample(self, epoch_id: int) -> tuple[datetime, tuple[SampledPartition, ...]] | None:
        """The lag sample taken after ``epoch_id``'s commit (time, every partition), or None."""
        ...


class LedgerAdministration(Protocol):
    """The schema and retention: ``eo-ledger migrate`` and ``eo-ledger prune``."""

    def migrate(self) -> list[int]:
        """Apply pending migrations now; the versions applied."""
        ...

    def schema_versions(self) -> list[int]:
        """Migration versions recorded in the database."""
        ...

    def prune_plan(self, pipelines: Sequence[str] | None, policy: PrunePolicy) -> list[PruneCount]:
        """What :meth:`prune` would delete now per pipeline; nothing changes. ``LookupError``
        names unknown pipelines."""
        ...

    def prune(
        self, pipelines: Sequence[str] | None, policy: PrunePolicy, *, batch_size: int = 1000
    ) -> list[PruneCount]:
        """Delete settled epochs matching ``policy`` in batches; what was deleted per pipeline."""
        ...


class AuditResults(Protocol):
    """The kept audits (docs/audit.md): stored by the audit DAG and ``eo-ledger audit``;
    read back through :class:`AuditReads` (part of :class:`LedgerReads`)."""

    def record_audit(
        self, report: Mapping[str, Any], *, run_key: str | None, source: str, started_at: datetime
    ) -> int:
        """Store an ``AuditReport.to_json()`` and its kept findings; the new ``audit_id``.
        A ``run_key`` stored before is replaced."""
        ...


class DeadLetterRecords(Protocol):
    """Where a Spark task's dead letters are stored."""

    def record_dead_letters(self, rows: Iterable[DeadLetter | Mapping[str, Any]]) -> int:
        """Idempotently store dead letters (a replay overwrites the same offsets); how many
        rows were written. Not a state change: no epoch moves."""
        ...


class LedgerObservations(LagSampleSink, DeadLetterRecords, Protocol):
    """What the ledger observes beside the state machine: lag samples and dead letters."""
