"""``Ledger``: the PostgreSQL epoch ledger, where epochs are stored.

Each state-changing method is one guarded transaction of the state machine
(``states.TRANSITIONS``): it refuses what the table or the fencing token forbids. The
reservation transactions are the protocol's scripts, run in :meth:`Ledger.transaction`.
When to call which is :class:`~airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol`'s;
operators, the Spark driver and the CLI go through the protocol, never through these
(tests/unit/test_protocol_reach.py fails otherwise).

Every public method runs in its own short transaction (commit on success, rollback on
error) on one psycopg2 connection per instance, opened lazily; a broken connection is
dropped and reopened by the next call. Pending migrations are applied on first use.
An instance is safe to share between threads (calls are serialized by a lock), but
one instance per thread or process is the intended use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.epochs import DeadLetter, Epoch
from airflow_provider_eo.ledger.model.history import HistoryEvent, Transition
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.states import OPEN_STATES, EpochKind
from airflow_provider_eo.ledger.store import (
    commit_statements,
    dead_letter_rows,
    epoch_transitions,
    history_rows,
    queries,
    retention,
)
from airflow_provider_eo.ledger.store.connection import LedgerConnection
from airflow_provider_eo.ledger.store.cursors import stream_cursors
from airflow_provider_eo.ledger.store.epoch_rows import EpochFilter, fetch_epoch, fetch_epochs
from airflow_provider_eo.ledger.store.migrate import applied_versions
from airflow_provider_eo.ledger.store.observations import LedgerObservations
from airflow_provider_eo.ledger.store.retention import PruneCount, PrunePolicy

log = logging.getLogger(__name__)


class Ledger(LedgerObservations):
    """The epoch ledger at ``dsn`` (a libpq DSN/URI) or from a connection factory;
    ``conn_id`` (the Airflow connection it came from) is named in connection errors.
    ``actor`` is recorded as the author of every change (default: :meth:`Actor.process`).
    Lag samples and the charts' reads: :class:`LedgerObservations`."""

    def __init__(
        self,
        dsn: str | Callable[[], Any],
        *,
        auto_migrate: bool = True,
        conn_id: str | None = None,
        actor: Actor | None = None,
    ) -> None:
        self._db = LedgerConnection(dsn, auto_migrate=auto_migrate, conn_id=conn_id, actor=actor)
        self._transaction = self._db.transaction

    @property
    def actor(self) -> Actor:
        """Who this ledger's changes are recorded as (``eo.epoch_transitions``)."""
        return self._db.actor

    @actor.setter
    def actor(self, actor: Actor) -> None:
        self._db.actor = actor

    @contextmanager
    def acting_as(self, actor: Actor) -> Iterator[Actor]:
        """Record the changes made inside the block as ``actor``'s, then restore the previous one."""
        with self._db.lock:
            previous, self.actor = self.actor, actor
            try:
                yield actor
            finally:
                self.actor = previous

    def close(self) -> None:
        """Close the connection (the next call reopens one)."""
        self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def migrate(self) -> list[int]:
        """Apply pending migrations now; return the versions applied."""
        return self._db.migrate()

    def schema_versions(self) -> list[int]:
        """Migration versions recorded in the database (LedgerUnavailable on connection breaks)."""
        with self._db.connected() as conn:
            return applied_versions(conn)

    def transaction(self) -> AbstractContextManager[Any]:
        """One transaction for a multi-statement script of the protocol (the reservation
        transactions, ``ledger/protocol/stream_reservation.py`` and
        ``ledger/protocol/backfill_reservation.py``):
        a psycopg2 cursor, committed when the block ends normally, rolled back when it raises."""
        return self._transaction()

    # -- transitions ---------------------------------------------------------------
    def vote_written(
        self, epoch_id: int, fencing_token: str, metrics: Mapping[str, Any] | None = None
    ) -> Epoch:
        """RESERVED -> WRITTEN with ``metrics``, only with the epoch's fencing token.

        Raises ``FencedOut`` (nothing changed) otherwise; repeating a successful vote
        with the same token is a no-op.
        """
        with self._transaction() as cur:
            epoch = epoch_transitions.vote_written(cur, epoch_id, fencing_token, metrics)
        log.info("voted WRITTEN epoch_id=%s pipeline=%s metrics=%s", epoch_id, epoch.pipeline, epoch.metrics)
        return epoch

    def mark_committed(
        self, epoch_id: int, reason: str | None = None, *, step_seconds: float | None = None
    ) -> Epoch:
        """WRITTEN -> COMMITTED (call after publishing offsets); COMMITTED: no-op success.
        ``reason`` is recorded in the epoch's history (None: "committed"); ``step_seconds``,
        how long the commit step has run so far, dates its start (``commit_started_at``).

        Raises ``IllegalTransition`` for RESERVED or ABORTED epochs.
        """
        with self._transaction() as cur:
            epoch, changed = commit_statements.mark_committed(cur, epoch_id, reason, step_seconds)
        if changed:
            log.info(
                "COMMITTED epoch_id=%s pipeline=%s ranges=%s", epoch_id, epoch.pipeline, epoch.ranges_brief
            )
        return epoch

    def abort(self, epoch_id: int, reason: str, *, allow_written: bool = False) -> Epoch:
        """RESERVED -> ABORTED (its ranges return to the next reservation); ABORTED: no-op.

        WRITTEN -> ABORTED only with ``allow_written=True`` (explicit operator action);
        COMMITTED epochs cannot be aborted. Raises ``IllegalTransition``.
        """
        with self._transaction() as cur:
            epoch, changed = epoch_transitions.abort(cur, epoch_id, reason, allow_written=allow_written)
        if changed:
            log.warning(
                "ABORTED epoch_id=%s pipeline=%s reason=%s ranges=%s",
                epoch_id,
                epoch.pipeline,
                reason,
                epoch.ranges_brief,
            )
        return epoch

    # -- queries -------------------------------------------------------------------
    def get_epoch(self, epoch_id: int) -> Epoch:
        """The epoch with its ranges; raises ``EpochNotFound``."""
        with self._transaction() as cur:
            return fetch_epoch(cur, epoch_id)

    def history(self, epoch_id: int) -> list[Transition]:
        """The epoch's transitions, oldest first (its creation first); raises ``EpochNotFound``."""
        with self._transaction() as cur:
            fetch_epoch(cur, epoch_id)
            return history_rows.epoch_history(cur, epoch_id)

    def histories(self, epoch_ids: Sequence[int]) -> dict[int, list[Transition]]:
        """The transitions of each epoch of ``epoch_ids`` (oldest first) in one statement."""
        with self._transaction() as cur:
            return history_rows.epochs_history(cur, epoch_ids)

    def pipeline_history(self, pipeline: str, limit: int = 100) -> list[HistoryEvent]:
        """The ``limit`` newest transitions and cursor moves of ``pipeline``, newest first;
        raises ``LookupError`` for a pipeline the ledger does not know and ``ValueError``
        for ``limit < 1``."""
        if limit < 1:
            raise ValueError(f"limit must be >= 1, not {limit}")
        with self._transaction() as cur:
            if not history_rows.pipeline_known(cur, pipeline):
                raise LookupError(f"unknown pipeline: {pipeline}")
            return history_rows.pipeline_history(cur, pipeline, limit)

    def open_epochs(self, pipeline: str, kind: EpochKind | str | None = None) -> list[Epoch]:
        """RESERVED and WRITTEN epochs of ``pipeline`` (of one kind if given), oldest first."""
        wanted = EpochFilter(
            pipeline=pipeline, states=OPEN_STATES, kind=None if kind is None else EpochKind(kind)
        )
        return self.epochs(wanted)

    def cursors(self, pipeline: str) -> dict[TopicPartition, int]:
        """Next stream offset per pinned partition of ``pipeline``."""
        with self._transaction() as cur:
            return stream_cursors(cur, pipeline)

    def gaps(self, pipeline: str) -> list[dict[str, Any]]:
        """Recorded data-loss gaps of ``pipeline`` (JSON-serializable)."""
        with self._transaction() as cur:
            return [gap.to_json() for gap in queries.gaps_by_pipeline(cur, pipeline).get(pipeline, [])]

    def list_pipelines(self) -> list[str]:
        """Names of pipelines known to the ledger, sorted."""
        with self._transaction() as cur:
            return queries.pipeline_names(cur)

    def epochs(self, wanted: EpochFilter) -> list[Epoch]:
        """Epochs matching ``wanted`` with their ranges, oldest first, in one transaction
        (with ``wanted.limit``: the newest ``limit`` of them)."""
        with self._transaction() as cur:
            return fetch_epochs(cur, wanted)

    def pipeline_overviews(self, pipeline: str | None = None) -> list[queries.PipelineOverview]:
        """Every pipeline's overview (or only ``pipeline``'s; [] if unknown), sorted by name,
        in one transaction of a fixed number of statements."""
        with self._transaction() as cur:
            return queries.pipeline_overviews(cur, pipeline)

    # -- retention -----------------------------------------------------------------
    def prune_plan(self, pipelines: Sequence[str] | None, policy: PrunePolicy) -> list[PruneCount]:
        """What :meth:`prune` would delete now per pipeline (every pipeline when None),
        sorted by name, read in one transaction; nothing changes. ``LookupError`` names
        unknown pipelines."""
        with self._transaction() as cur:
            names = retention.known_pipelines(cur, pipelines)
            return [retention.count_prunable(cur, name, policy) for name in names]

    def prune(
        self, pipelines: Sequence[str] | None, policy: PrunePolicy, *, batch_size: int = 1000
    ) -> list[PruneCount]:
        """Delete settled epochs matching ``policy`` (store/retention.py: open epochs,
        cursors, pins, gaps, dead letters and the epochs these name are kept), in
        transactions of at most ``batch_size`` epochs; what was deleted per pipeline."""
        with self._transaction() as cur:
            names = retention.known_pipelines(cur, pipelines)
        return [
            retention.prune_pipeline(self._transaction, name, policy, batch_size=batch_size) for name in names
        ]

    # -- dead letters --------------------------------------------------------------
    def record_dead_letters(self, rows: Iterable[DeadLetter | Mapping[str, Any]]) -> int:
        """Idempotently store dead letters (a replay overwrites the same offsets)."""
        with self._transaction() as cur:
            return dead_letter_rows.upsert_dead_letters(cur, rows)

    def dead_letter_count(self, pipeline: str, epoch_id: int | None = None) -> int:
        """Number of dead letters of ``pipeline`` (of one epoch if given)."""
        with self._transaction() as cur:
            return dead_letter_rows.count_dead_letters(cur, pipeline, epoch_id)

    def list_dead_letters(self, pipeline: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Dead letters of ``pipeline`` as JSON-serializable dicts."""
        with self._transaction() as cur:
            return dead_letter_rows.list_dead_letters(cur, pipeline, limit)
