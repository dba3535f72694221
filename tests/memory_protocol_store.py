"""An in-memory ``ProtocolStore`` (``ledger/model/ledger_roles.py``), for unit tests of the
protocol's decisions without PostgreSQL (tests/protocol_decisions.py).

Test-only on purpose: the PostgreSQL store and its schema trigger are the authority on
what a transition may do; this store mirrors their guards (``states.TRANSITIONS``, the
fencing rule) so the protocol's own decisions can be tested in milliseconds, and the same
tests run against PostgreSQL (tests/integration/test_protocol_decisions_postgres.py) to
keep the two in step. Nothing in the product may run on it: it has no reservation or
other SQL script (:meth:`transaction` refuses), no history and no dead letters.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.lag import LagSample
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.refusals import EpochNotFound, FencedOut
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import OPEN_STATES, EpochKind, EpochState, check_transition
from airflow_provider_eo.ledger.planning.fencing import AlreadyDone, Fenced, write_permission


class MemoryProtocolStore:
    """Epochs, stream cursors and lag samples in dicts; each method is atomic and
    refuses exactly what the PostgreSQL store refuses (and changes nothing then)."""

    def __init__(self, actor: Actor | None = None) -> None:
        self.actor = actor or Actor.process()
        self.epochs: dict[int, Epoch] = {}
        self.stream_cursors: dict[str, dict[TopicPartition, int]] = {}
        self.lag_samples: list[LagSample] = []
        #: ``(epoch_id, state, actor name)`` of every change, oldest first.
        self.changes: list[tuple[int, EpochState, str]] = []
        self._ids = itertools.count(1)

    @contextmanager
    def acting_as(self, actor: Actor) -> Iterator[Actor]:
        """Record the changes made inside the block as ``actor``'s, then restore the previous one."""
        previous, self.actor = self.actor, actor
        try:
            yield actor
        finally:
            self.actor = previous

    def transaction(self) -> Any:
        """Refused: the protocol's SQL scripts (reservations, seek, replay, the dead-letter
        publication) need PostgreSQL. Raises ``NotImplementedError``."""
        raise NotImplementedError("the in-memory store runs no SQL transaction script")

    # -- seeding (what a reservation script would insert) ----------------------------
    def reserve(
        self, pipeline: str, kind: EpochKind, run: RunIdentity, ranges: Sequence[PartitionRange]
    ) -> Epoch:
        """Insert a RESERVED epoch of ``run`` over ``ranges`` with a new fencing token; a
        stream epoch pins its partitions at their starts (if not pinned yet)."""
        epoch = Epoch(
            epoch_id=next(self._ids),
            pipeline=pipeline,
            kind=kind,
            state=EpochState.RESERVED,
            fencing_token=str(uuid.uuid4()),
            dag_id=run.dag_id,
            run_id=run.run_id,
            created_at=_now(),
            ranges=tuple(sorted(ranges, key=lambda r: r.tp)),
        )
        if kind is EpochKind.STREAM:
            cursors = self.stream_cursors.setdefault(pipeline, {})
            for r in epoch.ranges:
                cursors.setdefault(r.tp, r.start)
        return self._store(epoch)

    def cursors(self, pipeline: str) -> dict[TopicPartition, int]:
        """Next stream offset per pinned partition of ``pipeline``."""
        return dict(self.stream_cursors.get(pipeline, {}))

    # -- ProtocolStore ---------------------------------------------------------------
    def get_epoch(self, epoch_id: int) -> Epoch:
        """The epoch; raises ``EpochNotFound``."""
        try:
            return self.epochs[epoch_id]
        except KeyError:
            raise EpochNotFound(epoch_id) from None

    def open_epochs(self, pipeline: str, kind: EpochKind | str | None = None) -> list[Epoch]:
        """RESERVED and WRITTEN epochs of ``pipeline`` (of one kind if given), oldest first."""
        wanted = None if kind is None else EpochKind(kind)
        return [
            e
            for _, e in sorted(self.epochs.items())
            if e.pipeline == pipeline and e.state in OPEN_STATES and wanted in (None, e.kind)
        ]

    def vote_written(
        self,
        epoch_id: int,
        fencing_token: str,
        metrics: Mapping[str, Any] | None = None,
        spec_digest: str | None = None,
    ) -> Epoch:
        """RESERVED -> WRITTEN with the epoch's token (and mapping); the same vote again:
        unchanged. Raises ``FencedOut`` (nothing changed), ``EpochNotFound``."""
        epoch = self.get_epoch(epoch_id)
        verdict = write_permission(epoch, fencing_token, spec_digest)
        if isinstance(verdict, AlreadyDone):
            return epoch
        if isinstance(verdict, Fenced):
            raise FencedOut(epoch_id, epoch.state.value, verdict.reason)
        return self._store(
            replace(epoch, state=EpochState.WRITTEN, written_at=_now(), metrics=dict(metrics or {}))
        )

    def mark_committed(
        self, epoch_id: int, reason: str | None = None, *, step_seconds: float | None = None
    ) -> Epoch:
        """WRITTEN -> COMMITTED, a stream epoch's cursors raised to its ends; COMMITTED:
        unchanged. Raises ``IllegalTransition`` (RESERVED, ABORTED), ``EpochNotFound``."""
        epoch = self.get_epoch(epoch_id)
        if epoch.state is EpochState.COMMITTED:
            return epoch
        check_transition(epoch_id, epoch.state, EpochState.COMMITTED)
        if epoch.kind is EpochKind.STREAM:
            cursors = self.stream_cursors.setdefault(epoch.pipeline, {})
            for r in epoch.ranges:
                cursors[r.tp] = max(cursors.get(r.tp, r.end), r.end)
        return self._store(replace(epoch, state=EpochState.COMMITTED, committed_at=_now()))

    def abort(self, epoch_id: int, reason: str, *, allow_written: bool = False) -> Epoch:
        """RESERVED (WRITTEN with ``allow_written``) -> ABORTED; ABORTED: unchanged. Raises
        ``IllegalTransition`` otherwise, ``EpochNotFound``."""
        epoch = self.get_epoch(epoch_id)
        if epoch.state is EpochState.ABORTED:
            return epoch
        check_transition(epoch_id, epoch.state, EpochState.ABORTED, operator_action=allow_written)
        return self._store(replace(epoch, state=EpochState.ABORTED, aborted_at=_now(), error=reason))

    def record_lag_sample(self, sample: LagSample) -> int:
        """Keep ``sample``; its id (1, 2, ...)."""
        self.lag_samples.append(sample)
        return len(self.lag_samples)

    def _store(self, epoch: Epoch) -> Epoch:
        self.epochs[epoch.epoch_id] = epoch
        self.changes.append((epoch.epoch_id, epoch.state, self.actor.name))
        return epoch


def _now() -> datetime:
    return datetime.now(UTC)
