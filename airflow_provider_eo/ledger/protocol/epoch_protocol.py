"""``EpochProtocol``: the whole life of an epoch, in one place.

The shape is Flink's ``TwoPhaseCommitSinkFunction``: a few final entry points, each
with a typed outcome. Operators, the Spark driver and the ``eo-ledger`` CLI are adapters of
these calls; none of them decides anything about an epoch itself (the UI and the CLI's
read-only commands only read the store: ``store.queries``).

=================  ===========================================================
``reserve_stream``  open the pipeline's next stream epoch from its cursor
                    (planning: ``stream_plan``; the transaction:
                    ``stream_reservation``)
``plan_backfill``   a backfill run's chunks: the requested range cut into
                    epochs of at most ``backfill.max_records_per_epoch``
                    (planning: ``backfill_plan``)
``reserve_backfill`` open a backfill epoch over a requested range (a chunk);
                    what this run already committed comes back as
                    ``AlreadyCommitted`` (a resumed run)
``plan_replay``     which dead letters a replay selects (a replay is a backfill
                    whose chunks carry their offsets; planning:
                    ``replay_plan``, reads: ``replay``)
``begin_write``     may this writer write the epoch? lease, already done, fenced
``vote``            RESERVED -> WRITTEN, the writer's last act
``commit``          publish the ranges' ends to the consumer group, then
                    WRITTEN -> COMMITTED
``abort``           RESERVED (or, by an operator, WRITTEN) -> ABORTED
``recover``         settle a pipeline's open epochs left by other runs
``release``         settle a backfill run's own epochs when it ends
``seek``            move a pipeline's stream cursors (an operator's act;
                    planning: ``seek_plan``, the transaction: ``seek``)
``reset_to_group``  move them to the consumer group's committed offsets
``publish_dead_letters`` send the committed dead letters the pipeline's
                    dead-letter topic lacks, exactly once
                    (``dead_letter_publication``)
=================  ===========================================================

``plan_replay``, ``replay_selection``, ``seek``, ``reset_to_group`` and
``publish_dead_letters`` are inherited from :class:`~.operator_actions.OperatorActions`.

Every durable effect happens in the ledger (one short transaction each) or in the
consumer group; the order between them is the protocol's invariant: the group learns
offsets only for data already in HBase, and the ledger says COMMITTED only after the
group has them. A crash between any two effects leaves a state :meth:`recover`
resolves. See docs/DESIGN.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_eo import protocol_points
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.errors import KafkaAccessError
from airflow_provider_eo.ledger.model.epochs import (
    LOGGED_RANGES,
    Epoch,
    PartitionRange,
    offsets_text,
    ranges_text,
)
from airflow_provider_eo.ledger.model.offsets import KafkaOffsets
from airflow_provider_eo.ledger.model.refusals import EpochOfAnotherPipeline, FencedOut
from airflow_provider_eo.ledger.model.runs import RunIdentity, RunIsLive
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState, check_transition
from airflow_provider_eo.ledger.planning.backfill_plan import split_into_chunks, validate_backfill_ranges
from airflow_provider_eo.ledger.planning.backfill_request import BackfillRequest
from airflow_provider_eo.ledger.planning.fencing import (
    Fenced,
    WriteLease,
    WritePermission,
    write_permission,
)
from airflow_provider_eo.ledger.planning.recovery_plan import (
    Action,
    SettlementPlan,
    plan_recovery,
    plan_release,
)
from airflow_provider_eo.ledger.planning.replay_plan import ReplayFilter
from airflow_provider_eo.ledger.protocol.backfill_reservation import plan_ranges, reserve_backfill
from airflow_provider_eo.ledger.protocol.dead_letter_publication import DeadLetterPublication
from airflow_provider_eo.ledger.protocol.operator_tools import DeadLetterTopics, OperatorActions
from airflow_provider_eo.ledger.protocol.outcomes import (
    AlreadyCommitted,
    AlreadyWritten,
    Committed,
    NothingToReserve,
    Reservation,
    Reserved,
    Settled,
)
from airflow_provider_eo.ledger.protocol.replay_reads import checked_replay_plan
from airflow_provider_eo.ledger.protocol.stream_reservation import reserve_stream
from airflow_provider_eo.ledger.store.ledger import Ledger

log = logging.getLogger(__name__)

__all__ = [
    "AlreadyCommitted",
    "AlreadyWritten",
    "Committed",
    "DeadLetterPublication",
    "EpochProtocol",
    "GroupId",
    "NothingToReserve",
    "Reservation",
    "Reserved",
    "Settled",
]

#: The consumer group a commit publishes to, or how to find it from the pipeline name
#: (called only when a stream epoch has offsets to publish).
GroupId = str | Callable[[str], str]


class EpochProtocol(OperatorActions):
    """The epoch protocol over ``ledger`` and, where Kafka is needed, ``kafka``.

    ``kafka`` is a zero-argument factory (e.g. a hook constructor), called at most once
    and only by an entry point that needs the broker, so the Spark driver and the CLI's
    read-only commands never connect to Kafka. ``dead_letter_topics`` makes a pipeline's
    dead-letter topic (``hooks.dead_letter_topic.DeadLetterTopic``), called by each
    :meth:`publish_dead_letters` of a pipeline that has one.
    """

    def __init__(
        self,
        ledger: Ledger,
        kafka: Callable[[], KafkaOffsets] | None = None,
        dead_letter_topics: DeadLetterTopics | None = None,
    ) -> None:
        self.ledger = ledger
        self._kafka_factory = kafka
        self._kafka: KafkaOffsets | None = None
        self._dead_letter_topics = dead_letter_topics

    @property
    def kafka(self) -> KafkaOffsets:
        """The broker's offsets (created on first use); ``RuntimeError`` without a factory."""
        if self._kafka is None:
            if self._kafka_factory is None:
                raise RuntimeError("this EpochProtocol was created without Kafka")
            self._kafka = self._kafka_factory()
        return self._kafka

    # -- phase 1: reserve -----------------------------------------------------------
    def reserve_stream(self, spec: PipelineSpec, run: RunIdentity) -> Reservation:
        """Reserve ``spec``'s next stream epoch for ``run``.

        Raises ``OpenEpochConflict`` (another run's stream epoch is open),
        ``DataLossError`` / ``CursorBeyondHighWatermark`` (unusable cursor) and Kafka
        errors prefixed with the pipeline's name.
        """
        try:
            with self.ledger.transaction() as cur:
                outcome = reserve_stream(cur, spec, self.kafka, run)
        except KafkaAccessError as exc:  # the broker's errors name topics: say which pipeline asked
            raise type(exc)(f"pipeline {spec.name!r}: {exc}") from exc
        if outcome.error is not None:  # raised after the commit: new pins stay pinned
            raise outcome.error
        epoch = outcome.epoch
        if epoch is None:
            log.info("no new data, no epoch opened pipeline=%s run=%s", spec.name, run)
            return NothingToReserve(spec.name, "no new data, no epoch opened")
        log.info("reserved %s run=%s", _describe(epoch), run)
        protocol_points.passed("reserve.after_insert")
        return Reserved(epoch)

    def plan_backfill(
        self, spec: PipelineSpec, request: BackfillRequest
    ) -> tuple[tuple[PartitionRange, ...], ...]:
        """The chunks (one epoch each) a backfill run writes for ``request``, in order:
        its ranges cut by ``spec.backfill.max_records_per_epoch`` (empty: nothing to do).

        Deterministic for the same ranges, so a cleared run plans the same chunks again
        and :meth:`reserve_backfill` finds the ones it committed. Raises ``ValueError``
        for a malformed request and ``InvalidRanges`` for ranges outside the watermarks.

        A ``ReplayFilter`` plans the replay of the dead letters it selects
        (:meth:`plan_replay`): chunks whose ranges carry the offsets to write; nothing left
        to replay (all resolved, none matching): no chunk, the reason logged.
        """
        if isinstance(request, ReplayFilter):
            return checked_replay_plan(self.ledger, spec, request, self.kafka).chunks
        plan = plan_ranges(spec, request, self.kafka)
        if plan.ranges:
            validate_backfill_ranges(plan.ranges, plan.watermarks)
        chunks = split_into_chunks(plan.ranges, spec.backfill.max_records_per_epoch)
        log.info(
            "planned backfill pipeline=%s chunks=%d records=%d ranges=%s",
            spec.name, len(chunks), sum(r.record_count for r in plan.ranges),
            ranges_text(plan.ranges, LOGGED_RANGES) or "-",
        )  # fmt: skip
        return chunks

    def reserve_backfill(self, spec: PipelineSpec, request: BackfillRequest, run: RunIdentity) -> Reservation:
        """Reserve a backfill epoch for ``run`` over what ``request`` asks for.

        A run may hold several backfill epochs (chunks) over disjoint ranges. The same
        ranges again: the run's open epoch (a retry) or, when the run already committed
        exactly them, :class:`AlreadyCommitted` (a resumed run writes nothing twice);
        already WRITTEN by it: :class:`AlreadyWritten` (only the commit is left).
        Cursors, pins and the consumer group never move. Raises ``ValueError`` for a
        malformed request, ``InvalidRanges`` for ranges outside the watermarks and
        ``OpenEpochConflict`` when the ranges overlap another open epoch of the run, and
        ``ValueError`` for a ``ReplayFilter`` (a replay is planned into chunks first).
        """
        if isinstance(request, ReplayFilter):
            raise ValueError("a replay of dead letters is planned into chunks first (plan_backfill)")
        plan = plan_ranges(spec, request, self.kafka)
        if not plan.ranges:
            return NothingToReserve(spec.name, "nothing to backfill in the requested range")
        checked = validate_backfill_ranges(plan.ranges)
        with self.ledger.transaction() as cur:
            epoch = reserve_backfill(cur, spec.name, checked, run, plan.watermarks)
        log.info("reserved %s run=%s state=%s", _describe(epoch), run, epoch.state.value)
        if epoch.state is EpochState.COMMITTED:
            log.info("already committed by this run, nothing to write %s", _describe(epoch))
            return AlreadyCommitted(epoch)
        if epoch.state is EpochState.WRITTEN:
            log.info("already written by this run, only its commit is left %s", _describe(epoch))
            return AlreadyWritten(epoch)
        return Reserved(epoch)

    # -- phase 2: write and vote ----------------------------------------------------
    def begin_write(self, pipeline: str, epoch_id: int, fencing_token: str | None) -> WritePermission:
        """Whether a writer holding ``fencing_token`` may write ``epoch_id`` now.

        Raises ``EpochNotFound`` and ``EpochOfAnotherPipeline``; nothing is changed.
        """
        return write_permission(self._epoch_of(pipeline, epoch_id), fencing_token)

    def vote(self, lease: WriteLease, metrics: Mapping[str, Any]) -> Epoch | Fenced:
        """RESERVED -> WRITTEN with ``metrics``, only if ``lease`` still holds.

        Returns the WRITTEN epoch (a repeated vote: the same), or :class:`Fenced` when a
        newer writer or an abort got there first (nothing was changed).
        """
        try:
            return self.ledger.vote_written(lease.epoch.epoch_id, lease.fencing_token, metrics)
        except FencedOut:
            current = self.ledger.get_epoch(lease.epoch.epoch_id)
            verdict = write_permission(current, lease.fencing_token)
            return verdict if isinstance(verdict, Fenced) else Fenced(current, token_mismatch=False)

    # -- phase 3: commit or abort ---------------------------------------------------
    def commit(
        self, epoch_id: int, *, group_id: GroupId, pipeline: str | None = None, reason: str | None = None
    ) -> Committed:
        """Publish a WRITTEN stream epoch's range ends to the group, then mark it COMMITTED
        (``reason`` goes to its history).

        Backfill epochs publish nothing. COMMITTED: a no-op success. RESERVED/ABORTED:
        ``IllegalTransition`` before anything is published; ``pipeline`` given and not
        the epoch's: ``EpochOfAnotherPipeline``. The step's duration dates its start in
        the ledger (``commit_started_at``, the commit phase of ``ledger/model/phases.py``).
        """
        began = time.monotonic()
        epoch = self._epoch_of(pipeline, epoch_id) if pipeline else self.ledger.get_epoch(epoch_id)
        if epoch.state is EpochState.COMMITTED:
            log.info("epoch already COMMITTED, nothing to do %s", _describe(epoch))
            return Committed(epoch, {}, None, already_committed=True)
        check_transition(epoch_id, epoch.state, EpochState.COMMITTED)
        offsets = epoch.end_offsets if epoch.kind is EpochKind.STREAM else {}
        group = None
        protocol_points.passed("commit.before_publish")
        if offsets:
            group = group_id if isinstance(group_id, str) else group_id(epoch.pipeline)
            self.kafka.commit_offsets(group, offsets)
            protocol_points.passed("commit.after_publish")
            log.info(
                "published offsets %s group=%s offsets=%s", _describe(epoch), group, offsets_text(offsets)
            )
        committed = self.ledger.mark_committed(epoch_id, reason, step_seconds=time.monotonic() - began)
        return Committed(committed, offsets, group, already_committed=False)

    def abort(self, epoch_id: int, reason: str, *, allow_written: bool = False) -> Epoch:
        """RESERVED -> ABORTED (WRITTEN too with ``allow_written``: an operator's explicit
        choice; its HBase cells stay and the range is read again). ABORTED: no-op.
        Raises ``IllegalTransition`` otherwise."""
        return self.ledger.abort(epoch_id, reason, allow_written=allow_written)

    # -- settling what others left --------------------------------------------------
    def recover(
        self, spec: PipelineSpec, run: RunIdentity, is_live: RunIsLive, kind: EpochKind | None = None
    ) -> Settled:
        """Settle ``spec``'s open epochs (of ``kind``; all kinds when None) as
        :func:`~airflow_provider_eo.ledger.planning.recovery_plan.plan_recovery` plans, in epoch order;
        the history records these changes as ``recovery`` by this ledger's actor. Then
        finishes any interrupted dead-letter publication (:meth:`publish_dead_letters`);
        its failure raises (the epochs stay settled; the task's retry publishes)."""
        plan = plan_recovery(self.ledger.open_epochs(spec.name, kind), run, is_live)
        with self.ledger.acting_as(self.ledger.actor.recovering()):
            settled = self._carry_out(spec, plan)
        self.publish_dead_letters(spec)
        return settled

    def release(self, spec: PipelineSpec, run: RunIdentity) -> Settled:
        """Settle ``run``'s own open backfill epochs (its teardown): commit WRITTEN, abort RESERVED."""
        plan = plan_release(self.ledger.open_epochs(spec.name, EpochKind.BACKFILL), run)
        return self._carry_out(spec, plan)

    def _carry_out(self, spec: PipelineSpec, plan: SettlementPlan) -> Settled:
        """Carry ``plan`` out in order. A failure stops it with the earlier steps done;
        planning again settles the rest (every step is idempotent)."""
        for step in plan.steps:
            log.info("settling %s: %s (%s)", _describe(step.epoch), step.action.value, step.reason)
            if step.action is Action.COMMIT:
                self.commit(
                    step.epoch.epoch_id, group_id=spec.group_id, pipeline=spec.name, reason=step.reason
                )
            elif step.action is Action.ABORT:
                self.abort(step.epoch.epoch_id, step.reason)
        log.info(
            "settled pipeline=%s committed=%s aborted=%s kept=%s",
            spec.name, plan.ids(Action.COMMIT), plan.ids(Action.ABORT), plan.ids(Action.KEEP),
        )  # fmt: skip
        return Settled(spec.name, plan)

    def _epoch_of(self, pipeline: str, epoch_id: int) -> Epoch:
        epoch = self.ledger.get_epoch(epoch_id)
        if epoch.pipeline != pipeline:
            raise EpochOfAnotherPipeline(epoch_id, epoch.pipeline, pipeline)
        return epoch


def _describe(epoch: Epoch) -> str:
    return (
        f"pipeline={epoch.pipeline} epoch_id={epoch.epoch_id} kind={epoch.kind.value} "
        f"ranges={epoch.ranges_brief} records={epoch.record_count}"
    )
