"""The protocol's store in PostgreSQL (``ProtocolStore``, ``ledger/model/ledger_roles.py``):
the guarded transitions of the state machine (``states.TRANSITIONS``), the epochs they
read, who acts, the script transaction and the commit's lag sample.

Each transition is one guarded transaction: it refuses what the table or the fencing token
forbids. When to call which is
:class:`~airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol`'s; operators,
the Spark driver and the CLI go through the protocol, never through these
(tests/unit/test_protocol_reach.py fails otherwise).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.store import commit_statements, epoch_transitions
from airflow_provider_eo.ledger.store.epoch_lookup import PostgresEpochLookup
from airflow_provider_eo.ledger.store.observations import PostgresObservations

log = logging.getLogger(__name__)


class PostgresProtocolStore(PostgresEpochLookup, PostgresObservations):
    """What the protocol calls, over one ``LedgerConnection``."""

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

    def transaction(self) -> AbstractContextManager[Any]:
        """One transaction for a multi-statement script of the protocol (the reservation
        transactions, ``ledger/protocol/stream_reservation.py`` and
        ``ledger/protocol/backfill_reservation.py``):
        a psycopg2 cursor, committed when the block ends normally, rolled back when it raises."""
        return self._db.transaction()

    def vote_written(
        self,
        epoch_id: int,
        fencing_token: str,
        metrics: Mapping[str, Any] | None = None,
        spec_digest: str | None = None,
    ) -> Epoch:
        """RESERVED -> WRITTEN with ``metrics``, only with the epoch's fencing token (and
        mapping, when ``spec_digest`` is given).

        Raises ``FencedOut`` (nothing changed) otherwise; repeating a successful vote
        with the same token is a no-op.
        """
        with self._db.transaction() as cur:
            epoch = epoch_transitions.vote_written(cur, epoch_id, fencing_token, metrics, spec_digest)
        log.info(
            "voted WRITTEN epoch_id=%s pipeline=%s metrics=%s", epoch_id, epoch.pipeline, epoch.metrics_brief
        )
        return epoch

    def mark_committed(
        self, epoch_id: int, reason: str | None = None, *, step_seconds: float | None = None
    ) -> Epoch:
        """WRITTEN -> COMMITTED (call after publishing offsets); COMMITTED: no-op success.
        ``reason`` is recorded in the epoch's history (None: "committed"); ``step_seconds``,
        how long the commit step has run so far, dates its start (``commit_started_at``).

        Raises ``IllegalTransition`` for RESERVED or ABORTED epochs.
        """
        with self._db.transaction() as cur:
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
        with self._db.transaction() as cur:
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
