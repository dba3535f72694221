"""``EpochProtocol``: the whole life of an epoch, in one place.

The shape is Flink's ``TwoPhaseCommitSinkFunction``: a few final entry points, each
with a typed outcome. Operators, the Spark driver and the ``eo-ledger`` CLI are adapters of
these calls; none of them decides anything about an epoch itself (the UI and the CLI's
read-only commands only read the store: its ``LedgerReads`` role).

=================== =========================================================
``reserve_stream``  open the pipeline's next stream epoch from its cursor
                    (planning: ``stream_plan``; the transaction:
                    ``stream_reservation``)
``plan_backfill``   a backfill run's chunks: the requested range cut into
                    epochs of at most ``backfill.max_records_per_epoch``
                    (planning: ``backfill_plan``, ``replay_plan``)
``reserve_backfill`` open a backfill epoch over a requested range (a chunk);
                    what this run already committed comes back as
                    ``AlreadyCommitted`` (a resumed run)
``begin_write``     may this writer write the epoch? lease, already done, fenced
``replay_selection`` the offsets a replay epoch writes (the write step's read)
``vote``            RESERVED -> WRITTEN, the writer's last act
``commit``          publish the ranges' ends to the consumer group, then
                    WRITTEN -> COMMITTED, then the dead letters to their topic
                    (``commit_path``: the one way an epoch is committed)
``abort``           RESERVED (or, by an operator, WRITTEN) -> ABORTED
``recover``         settle a pipeline's open epochs left by other runs
``release``         settle a backfill run's own epochs when it ends
``publish_dead_letters`` send the committed dead letters the pipeline's
                    dead-letter topic lacks, exactly once
``epoch``           an epoch as the ledger holds it now
=================== =========================================================

An operator's own acts (a manual commit or abort, seek, reset, a replay's plan) go
through :class:`~airflow_provider_eo.ledger.protocol.operator_tools.OperatorTools`, a
facade over this protocol.

Every durable effect happens in the ledger (one short transaction each) or in the
consumer group; the order between them is the protocol's invariant: the group learns
offsets only for data already in HBase, and the ledger says COMMITTED only after the
group has them. A crash between any two effects leaves a state :meth:`recover`
resolves. See docs/DESIGN.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from airflow_provider_eo import protocol_points
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.errors import KafkaAccessError
from airflow_provider_eo.ledger.model.epoch import (
    LOGGED_RANGES,
    Epoch,
    PartitionRange,
    ranges_text,
)
from airflow_provider_eo.ledger.model.ledger_roles import ProtocolStore
from airflow_provider_eo.ledger.model.offsets import KafkaOffsets, KafkaOnFirstUse, TopicPartition
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
from airflow_provider_eo.ledger.protocol.commit_path import CommitPath, DeadLetterTopics, describe
from airflow_provider_eo.ledger.protocol.dead_letter_publication import DeadLetterPublication
from airflow_provider_eo.ledger.protocol.outcomes import (
    AlreadyCommitted,
    AlreadyWritten,
    Committed,
    NothingToReserve,
    Reservation,
    Reserved,
    Settled,
)
from airflow_provider_eo.ledger.protocol.replay_reads import checked_replay_plan, replay_selection
from airflow_provider_eo.ledger.protocol.stream_reservation import reserve_stream

log = logging.getLogger(__name__)

#: A pipeline's spec by its name (``eo-ledger commit`` looks the epoch's pipeline up in the
#: pipelines file): where a commit publishes offsets and dead letters.
PipelineLookup = Callable[[str], PipelineSpec]


class EpochProtocol:
    """The epoch protocol over ``ledger`` and, where Kafka is needed, ``kafka``.

    ``kafka`` is a zero-argument factory (e.g. a hook constructor), called at most once
    and only by an entry point that needs the broker, so the Spark driver and the CLI's
    read-only commands never connect to Kafka. ``dead_letter_topics`` makes a pipeline's
    dead-letter topic (``clients.dead_letter_topic.DeadLetterTopic``), called by each
    commit and :meth:`publish_dead_letters` of a pipeline that has one.
    """

    def __init__(
        self,
        ledger: ProtocolStore,
        kafka: Callable[[], KafkaOffsets] | None = None,
        dead_letter_topics: DeadLetterTopics | None = None,
    ) -> None:
        self._ledger = ledger
        self._kafka = kafka if isinstance(kafka, KafkaOnFirstUse) else KafkaOnFirstUse(kafka, "EpochProtocol")
        self._commits = CommitPath(ledger, self._kafka, dead_letter_topics)

    # -- phase 1: reserve -----------------------------------------------------------
    def reserve_stream(self, spec: PipelineSpec, run: RunIdentity) -> Reservation:
        """Reserve ``spec``'s next stream epoch for ``run``.

        Raises ``OpenEpochConflict`` (another run's stream epoch is open),
        ``DataLossError`` / ``CursorBeyondHighWatermark`` (unusable cursor) and Kafka
        errors prefixed with the pipeline's name.
        """
        try:
            with self._ledger.transaction() as cur:
                outcome = reserve_stream(cur, spec, self._kafka(), run)
        except KafkaAccessError as exc:  # the broker's errors name topics: say which pipeline asked
            raise type(exc)(f"pipeline {spec.name!r}: {exc}") from exc
        if outcome.error is not None:  # raised after the commit: new pins stay pinned
            raise outcome.error
        epoch = outcome.epoch
        if epoch is None:
            log.info("no new data, no epoch opened pipeline=%s run=%s", spec.name, run)
            return NothingToReserve(spec.name, "no new data, no epoch opened")
        log.info("reserved %s run=%s", describe(epoch), run)
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
        (``OperatorTools.plan_replay``): chunks whose ranges carry the offsets to write; nothing left
        to replay (all resolved, none matching): no chunk, the reason logged.
        """
        if isinstance(request, ReplayFilter):
            return checked_replay_plan(self._ledger, spec, request, self._kafka()).chunks
        plan = plan_ranges(spec, request, self._kafka())
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
        plan = plan_ranges(spec, request, self._kafka())
        if not plan.ranges:
            return NothingToReserve(spec.name, "nothing to backfill in the requested range")
        checked = validate_backfill_ranges(plan.ranges)
        with self._ledger.transaction() as cur:
            epoch = reserve_backfill(cur, spec.name, checked, run, plan.watermarks, spec=spec)
        log.info("reserved %s run=%s state=%s", describe(epoch), run, epoch.state.value)
        if epoch.state is EpochState.COMMITTED:
            log.info("already committed by this run, nothing to write %s", describe(epoch))
            return AlreadyCommitted(epoch)
        if epoch.state is EpochState.WRITTEN:
            log.info("already written by this run, only its commit is left %s", describe(epoch))
            return AlreadyWritten(epoch)
        return Reserved(epoch)

    # -- phase 2: write and vote ----------------------------------------------------
    def begin_write(
        self, pipeline: str, epoch_id: int, fencing_token: str | None, spec_digest: str | None = None
    ) -> WritePermission:
        """Whether a writer holding ``fencing_token`` and running the mapping of ``spec_digest``
        (config/spec_digest.py; None: not checked) may write ``epoch_id`` now.

        Raises ``EpochNotFound`` and ``EpochOfAnotherPipeline``; nothing is changed.
        """
        return write_permission(self._epoch_of(pipeline, epoch_id), fencing_token, spec_digest)

    def vote(self, lease: WriteLease, metrics: Mapping[str, Any]) -> Epoch | Fenced:
        """RESERVED -> WRITTEN with ``metrics``, only if ``lease`` still holds.

        Returns the WRITTEN epoch (a repeated vote: the same), or :class:`Fenced` when a
        newer writer or an abort got there first, or the epoch records another mapping than
        the lease's (nothing was changed).
        """
        epoch_id = lease.epoch.epoch_id
        try:
            return self._ledger.vote_written(epoch_id, lease.fencing_token, metrics, lease.spec_digest)
        except FencedOut:
            current = self._ledger.get_epoch(epoch_id)
            verdict = write_permission(current, lease.fencing_token, lease.spec_digest)
            return verdict if isinstance(verdict, Fenced) else Fenced(current, token_mismatch=False)

    def replay_selection(self, epoch_id: int) -> dict[TopicPartition, tuple[int, ...]] | None:
        """The offsets a replay epoch writes per partition (None: a plain epoch, all of
        its ranges). Read by the Spark driver, once per epoch."""
        return replay_selection(self._ledger, epoch_id)

    # -- phase 3: commit or abort ---------------------------------------------------
    def commit(
        self, epoch_id: int, *, pipeline: PipelineSpec | PipelineLookup, reason: str | None = None
    ) -> Committed:
        """Commit ``epoch_id`` through the one commit path (``commit_path.py``): a WRITTEN
        stream epoch's range ends go to the pipeline's group, the ledger marks it COMMITTED
        (``reason`` goes to its history), its lag sample is stored; then the pipeline's
        committed dead letters go to its dead-letter topic (``Committed.dead_letters``).

        ``pipeline``: the epoch's pipeline spec, or a lookup by pipeline name (called once,
        after the state check). COMMITTED: a no-op success that still publishes pending
        dead letters. RESERVED/ABORTED: ``IllegalTransition`` before anything is
        published; a spec not the epoch's: ``EpochOfAnotherPipeline``. A failed
        dead-letter publication raises after the commit (a retry publishes the rest).
        """
        given = pipeline if isinstance(pipeline, PipelineSpec) else None
        epoch = self.epoch(epoch_id, given.name if given else None)
        if epoch.state is not EpochState.COMMITTED:  # refused before the lookup
            check_transition(epoch_id, epoch.state, EpochState.COMMITTED)
        spec = given or pipeline(epoch.pipeline)  # type: ignore[operator]
        committed = self._commits.commit_one(spec, epoch, reason)
        return replace(committed, dead_letters=self._commits.publish_dead_letters(spec))

    def abort(self, epoch_id: int, reason: str, *, allow_written: bool = False) -> Epoch:
        """RESERVED -> ABORTED (WRITTEN too with ``allow_written``: an operator's explicit
        choice; its HBase cells stay and the range is read again). ABORTED: no-op.
        Raises ``IllegalTransition`` otherwise."""
        return self._ledger.abort(epoch_id, reason, allow_written=allow_written)

    # -- settling what others left --------------------------------------------------
    def recover(
        self, spec: PipelineSpec, run: RunIdentity, is_live: RunIsLive, kind: EpochKind | None = None
    ) -> Settled:
        """Settle ``spec``'s open epochs (of ``kind``; all kinds when None) as
        :func:`~airflow_provider_eo.ledger.planning.recovery_plan.plan_recovery` plans, in
        epoch order, through the commit path; the history records these changes as
        ``recovery`` by this ledger's actor. Its dead-letter publication also finishes
        any interrupted one; its failure raises (the epochs stay settled; a retry publishes)."""
        plan = plan_recovery(self._ledger.open_epochs(spec.name, kind), run, is_live)
        with self._ledger.acting_as(self._ledger.actor.recovering()):
            return self._settle(spec, plan)

    def release(self, spec: PipelineSpec, run: RunIdentity) -> Settled:
        """Settle ``run``'s own open backfill epochs (its teardown) through the commit path:
        commit WRITTEN, abort RESERVED; then publish the pipeline's dead letters."""
        plan = plan_release(self._ledger.open_epochs(spec.name, EpochKind.BACKFILL), run)
        return self._settle(spec, plan)

    def publish_dead_letters(self, spec: PipelineSpec) -> DeadLetterPublication:
        """Publish ``spec``'s committed dead letters its dead-letter topic lacks, exactly once
        (``dead_letter_publication.py``); every commit already does. No dead-letter topic:
        nothing (``topic`` None). Raises ``DeadLetterTopicMissing`` / ``EoKafkaError`` naming
        pipeline and topic, ``RuntimeError`` without ``dead_letter_topics``."""
        return self._commits.publish_dead_letters(spec)

    # -- reads ----------------------------------------------------------------------
    def epoch(self, epoch_id: int, pipeline: str | None = None) -> Epoch:
        """The epoch as the ledger holds it now. Raises ``EpochNotFound``, and
        ``EpochOfAnotherPipeline`` when ``pipeline`` is given and not the epoch's."""
        return self._epoch_of(pipeline, epoch_id) if pipeline else self._ledger.get_epoch(epoch_id)

    def _settle(self, spec: PipelineSpec, plan: SettlementPlan) -> Settled:
        """Carry ``plan`` out (``CommitPath.settle``) and log what was done."""
        for step in plan.steps:
            log.info("settling %s: %s (%s)", describe(step.epoch), step.action.value, step.reason)
        committed, letters = self._commits.settle(spec, plan.steps)
        log.info(
            "settled pipeline=%s committed=%s aborted=%s kept=%s",
            spec.name, plan.ids(Action.COMMIT), plan.ids(Action.ABORT), plan.ids(Action.KEEP),
        )  # fmt: skip
        return Settled(spec.name, plan, tuple(committed), letters)

    def _epoch_of(self, pipeline: str, epoch_id: int) -> Epoch:
        epoch = self._ledger.get_epoch(epoch_id)
        if epoch.pipeline != pipeline:
            raise EpochOfAnotherPipeline(epoch_id, epoch.pipeline, pipeline)
        return epoch
