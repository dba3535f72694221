"""``EpochProtocol``'s decisions, written once and run on two stores: in memory
(tests/unit/test_protocol_decisions.py, with an in-memory Kafka offsets recorder) and on
PostgreSQL with the real broker (tests/integration/test_protocol_decisions_postgres.py).
Both variants subclass :class:`ProtocolDecisions` and provide its ``world`` fixture; every
test asserts exactly the same outcome on both.

Every world has one pipeline (``world.spec``) reading one topic of one partition
(``world.tp``); a stream epoch reserved by the world covers the 3 records produced just
before, from the pipeline's cursor; a backfill epoch covers 3 offsets no other epoch of
the world covers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

import pytest

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.ledger_roles import ProtocolStore
from airflow_provider_eo.ledger.model.offsets import KafkaOffsets, TopicPartition
from airflow_provider_eo.ledger.model.refusals import EpochNotFound, EpochOfAnotherPipeline, IllegalTransition
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.ledger.planning.fencing import AlreadyDone, Fenced, WriteLease
from airflow_provider_eo.ledger.planning.recovery_plan import Action
from airflow_provider_eo.ledger.protocol import EpochProtocol

MISSING_EPOCH = 987_654_321
METRICS = {"records": 3}


class DecisionWorld(Protocol):
    """A store with one pipeline, its protocol and its Kafka."""

    @property
    def spec(self) -> PipelineSpec:
        """The world's pipeline."""
        ...

    @property
    def tp(self) -> TopicPartition:
        """The one partition of its topic."""
        ...

    @property
    def store(self) -> ProtocolStore:
        """The store under test."""
        ...

    @property
    def kafka(self) -> KafkaOffsets:
        """The protocol's Kafka (the group's offsets are read from it)."""
        ...

    @property
    def protocol(self) -> EpochProtocol:
        """``EpochProtocol`` over :attr:`store` and :attr:`kafka`."""
        ...

    def stream_epoch(self, run: RunIdentity) -> Epoch:
        """3 records produced, then a RESERVED stream epoch of ``run`` from the cursor."""
        ...

    def backfill_epoch(self, run: RunIdentity) -> Epoch:
        """A RESERVED backfill epoch of ``run`` over 3 offsets of its own."""
        ...


RUN = RunIdentity("eo_stream__p", "run-1")
OTHER_RUN = RunIdentity("eo_backfill__p", "run-2")


def written(world: DecisionWorld, epoch: Epoch) -> Epoch:
    """``epoch`` voted WRITTEN by its own writer."""
    return world.store.vote_written(epoch.epoch_id, epoch.fencing_token, METRICS)


def in_state(world: DecisionWorld, state: EpochState, kind: EpochKind = EpochKind.BACKFILL) -> Epoch:
    """A new epoch of ``kind`` brought to ``state`` by the store's own transitions."""
    epoch = world.stream_epoch(RUN) if kind is EpochKind.STREAM else world.backfill_epoch(RUN)
    if state in (EpochState.WRITTEN, EpochState.COMMITTED):
        epoch = written(world, epoch)
    if state is EpochState.COMMITTED:
        epoch = world.store.mark_committed(epoch.epoch_id)
    if state is EpochState.ABORTED:
        epoch = world.store.abort(epoch.epoch_id, "seeded aborted")
    assert epoch.state is state
    return epoch


def group_offsets(world: DecisionWorld) -> dict[TopicPartition, int | None]:
    """The pipeline's consumer group's committed offset of the world's partition."""
    return world.kafka.committed_offsets(world.spec.group_id, [world.tp])


def state_of(world: DecisionWorld, epoch: Epoch) -> EpochState:
    return world.store.get_epoch(epoch.epoch_id).state


class ProtocolDecisions:
    """The decisions; a subclass provides the ``world`` fixture (a :class:`DecisionWorld`)."""

    # -- transitions ----------------------------------------------------------------
    def test_a_vote_with_the_lease_moves_reserved_to_written(self, world: DecisionWorld) -> None:
        epoch = world.backfill_epoch(RUN)
        lease = world.protocol.begin_write(world.spec.name, epoch.epoch_id, epoch.fencing_token)
        assert lease == WriteLease(epoch, epoch.fencing_token)
        voted = world.protocol.vote(lease, METRICS)
        assert isinstance(voted, Epoch)
        assert (voted.state, voted.metrics, voted.fencing_token) == (
            EpochState.WRITTEN, METRICS, epoch.fencing_token,
        )  # fmt: skip
        assert world.protocol.vote(lease, METRICS) == voted  # a repeated vote: the same epoch

    def test_a_commit_publishes_the_stream_epochs_ends_then_marks_it_committed(
        self, world: DecisionWorld
    ) -> None:
        epoch = in_state(world, EpochState.WRITTEN, EpochKind.STREAM)
        assert group_offsets(world) == {world.tp: None}
        committed = world.protocol.commit(epoch.epoch_id, pipeline=world.spec)
        assert committed.epoch.state is EpochState.COMMITTED
        assert committed.published == {world.tp: 3}
        assert committed.group_id == world.spec.group_id
        assert committed.already_committed is False
        assert committed.high_watermarks == {world.tp: 3}
        assert committed.dead_letters is not None
        assert (committed.dead_letters.topic, committed.dead_letters.published) == (None, 0)
        assert group_offsets(world) == {world.tp: 3}
        assert state_of(world, epoch) is EpochState.COMMITTED

    def test_a_backfill_commit_publishes_nothing(self, world: DecisionWorld) -> None:
        epoch = in_state(world, EpochState.WRITTEN)
        committed = world.protocol.commit(epoch.epoch_id, pipeline=world.spec)
        assert (committed.epoch.state, committed.published, committed.group_id) == (
            EpochState.COMMITTED, {}, None,
        )  # fmt: skip
        assert committed.high_watermarks == {}
        assert group_offsets(world) == {world.tp: None}

    def test_a_commit_by_pipeline_lookup_asks_for_the_epochs_pipeline(self, world: DecisionWorld) -> None:
        epoch = in_state(world, EpochState.WRITTEN)
        asked: list[str] = []

        def lookup(name: str) -> PipelineSpec:
            asked.append(name)
            return world.spec

        assert world.protocol.commit(epoch.epoch_id, pipeline=lookup).epoch.state is EpochState.COMMITTED
        assert asked == [world.spec.name]

    def test_a_second_commit_is_a_no_op(self, world: DecisionWorld) -> None:
        epoch = in_state(world, EpochState.WRITTEN, EpochKind.STREAM)
        first = world.protocol.commit(epoch.epoch_id, pipeline=world.spec)
        again = world.protocol.commit(epoch.epoch_id, pipeline=world.spec)
        assert again.epoch == first.epoch
        assert (again.published, again.group_id, again.already_committed) == ({}, None, True)
        assert group_offsets(world) == {world.tp: 3}

    def test_an_abort_moves_reserved_to_aborted(self, world: DecisionWorld) -> None:
        epoch = world.backfill_epoch(RUN)
        aborted = world.protocol.abort(epoch.epoch_id, "operator said so")
        assert (aborted.state, aborted.error) == (EpochState.ABORTED, "operator said so")
        assert world.protocol.abort(epoch.epoch_id, "again") == aborted  # ABORTED: a no-op

    def test_written_is_aborted_only_with_allow_written(self, world: DecisionWorld) -> None:
        epoch = in_state(world, EpochState.WRITTEN)
        with pytest.raises(IllegalTransition):
            world.protocol.abort(epoch.epoch_id, "not allowed")
        assert state_of(world, epoch) is EpochState.WRITTEN
        aborted = world.protocol.abort(epoch.epoch_id, "by an operator", allow_written=True)
        assert aborted.state is EpochState.ABORTED

    # -- refusals -------------------------------------------------------------------
    @pytest.mark.parametrize("source", [EpochState.RESERVED, EpochState.ABORTED])
    def test_a_commit_from_an_illegal_state_publishes_nothing(
        self, world: DecisionWorld, source: EpochState
    ) -> None:
        epoch = in_state(world, source, EpochKind.STREAM)
        with pytest.raises(IllegalTransition):
            world.protocol.commit(epoch.epoch_id, pipeline=world.spec)
        assert state_of(world, epoch) is source
        assert group_offsets(world) == {world.tp: None}

    @pytest.mark.parametrize("allow_written", [False, True])
    def test_a_committed_epoch_is_never_aborted(self, world: DecisionWorld, allow_written: bool) -> None:
        epoch = in_state(world, EpochState.COMMITTED)
        with pytest.raises(IllegalTransition):
            world.protocol.abort(epoch.epoch_id, "too late", allow_written=allow_written)
        assert state_of(world, epoch) is EpochState.COMMITTED

    def test_an_epoch_of_another_pipeline_is_refused(self, world: DecisionWorld) -> None:
        epoch = in_state(world, EpochState.WRITTEN, EpochKind.STREAM)
        other = replace(world.spec, name=f"{world.spec.name}-other")
        with pytest.raises(EpochOfAnotherPipeline):
            world.protocol.begin_write(other.name, epoch.epoch_id, epoch.fencing_token)
        with pytest.raises(EpochOfAnotherPipeline):
            world.protocol.commit(epoch.epoch_id, pipeline=other)
        with pytest.raises(EpochOfAnotherPipeline):
            world.protocol.epoch(epoch.epoch_id, other.name)
        assert state_of(world, epoch) is EpochState.WRITTEN
        assert group_offsets(world) == {world.tp: None}

    @pytest.mark.parametrize(
        "call",
        [
            lambda w: w.protocol.begin_write(w.spec.name, MISSING_EPOCH, None),
            lambda w: w.protocol.commit(MISSING_EPOCH, pipeline=w.spec),
            lambda w: w.protocol.abort(MISSING_EPOCH, "gone"),
            lambda w: w.protocol.epoch(MISSING_EPOCH),
        ],
        ids=["begin_write", "commit", "abort", "epoch"],
    )
    def test_an_unknown_epoch_is_not_found(
        self, world: DecisionWorld, call: Callable[[DecisionWorld], object]
    ) -> None:
        with pytest.raises(EpochNotFound):
            call(world)

    # -- fencing --------------------------------------------------------------------
    def test_begin_write_without_a_token_leases_the_epochs_token(self, world: DecisionWorld) -> None:
        epoch = world.backfill_epoch(RUN)
        assert world.protocol.begin_write(world.spec.name, epoch.epoch_id, None) == WriteLease(
            epoch, epoch.fencing_token
        )

    def test_begin_write_after_the_vote_is_already_done(self, world: DecisionWorld) -> None:
        epoch = in_state(world, EpochState.WRITTEN)
        permission = world.protocol.begin_write(world.spec.name, epoch.epoch_id, epoch.fencing_token)
        assert permission == AlreadyDone(epoch)

    def test_another_token_is_fenced_and_its_vote_changes_nothing(self, world: DecisionWorld) -> None:
        epoch = world.backfill_epoch(RUN)
        stale = "00000000-0000-0000-0000-000000000000"
        assert world.protocol.begin_write(world.spec.name, epoch.epoch_id, stale) == Fenced(
            epoch, token_mismatch=True
        )
        assert world.protocol.vote(WriteLease(epoch, stale), METRICS) == Fenced(epoch, token_mismatch=True)
        assert world.store.get_epoch(epoch.epoch_id) == epoch

    def test_a_vote_after_an_abort_is_fenced_and_changes_nothing(self, world: DecisionWorld) -> None:
        epoch = world.backfill_epoch(RUN)
        lease = world.protocol.begin_write(world.spec.name, epoch.epoch_id, epoch.fencing_token)
        assert isinstance(lease, WriteLease)
        aborted = world.protocol.abort(epoch.epoch_id, "recovered")
        assert world.protocol.begin_write(world.spec.name, epoch.epoch_id, epoch.fencing_token) == Fenced(
            aborted, token_mismatch=False
        )
        assert world.protocol.vote(lease, METRICS) == Fenced(aborted, token_mismatch=False)
        assert world.store.get_epoch(epoch.epoch_id) == aborted

    # -- recovery and release -------------------------------------------------------
    def test_recovery_commits_written_aborts_dead_runs_and_keeps_live_ones(
        self, world: DecisionWorld
    ) -> None:
        me, dead, live = RunIdentity("d", "me"), RunIdentity("d", "dead"), RunIdentity("d", "live")
        stream = written(world, world.stream_epoch(dead))
        of_dead, of_live = world.backfill_epoch(dead), world.backfill_epoch(live)
        mine = world.backfill_epoch(me)
        asked: list[RunIdentity] = []

        def is_live(run: RunIdentity) -> bool:
            asked.append(run)
            return run == live

        settled = world.protocol.recover(world.spec, me, is_live)
        assert settled.plan.ids(Action.COMMIT) == [stream.epoch_id]
        assert settled.plan.ids(Action.ABORT) == [of_dead.epoch_id]
        assert settled.plan.ids(Action.KEEP) == [of_live.epoch_id, mine.epoch_id]
        assert [c.epoch.epoch_id for c in settled.committed] == [stream.epoch_id]
        assert sorted(asked, key=str) == [dead, live]  # asked only about other runs' RESERVED
        assert [state_of(world, e) for e in (stream, of_dead, of_live, mine)] == [
            EpochState.COMMITTED, EpochState.ABORTED, EpochState.RESERVED, EpochState.RESERVED,
        ]  # fmt: skip
        assert group_offsets(world) == {world.tp: 3}

    def test_recovery_of_one_kind_touches_only_that_kind(self, world: DecisionWorld) -> None:
        dead = RunIdentity("d", "dead")
        stream = written(world, world.stream_epoch(dead))
        backfill = world.backfill_epoch(dead)
        settled = world.protocol.recover(world.spec, RUN, lambda run: False, EpochKind.BACKFILL)
        assert [step.epoch.epoch_id for step in settled.plan.steps] == [backfill.epoch_id]
        assert state_of(world, stream) is EpochState.WRITTEN
        assert state_of(world, backfill) is EpochState.ABORTED
        assert settled.committed == ()
        assert group_offsets(world) == {world.tp: None}

    def test_release_settles_only_the_runs_own_backfill_epochs(self, world: DecisionWorld) -> None:
        own_written = written(world, world.backfill_epoch(RUN))
        own_reserved = world.backfill_epoch(RUN)
        others = world.backfill_epoch(OTHER_RUN)
        others_written = written(world, world.backfill_epoch(OTHER_RUN))
        stream = world.stream_epoch(RUN)
        settled = world.protocol.release(world.spec, RUN)
        assert settled.plan.ids(Action.COMMIT) == [own_written.epoch_id]
        assert settled.plan.ids(Action.ABORT) == [own_reserved.epoch_id]
        assert settled.plan.ids(Action.KEEP) == []
        assert [state_of(world, e) for e in (own_written, own_reserved, others, others_written, stream)] == [
            EpochState.COMMITTED, EpochState.ABORTED, EpochState.RESERVED, EpochState.WRITTEN,
            EpochState.RESERVED,
        ]  # fmt: skip
        assert group_offsets(world) == {world.tp: None}
