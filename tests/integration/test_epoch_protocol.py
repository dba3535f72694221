"""``EpochProtocol`` entry points against the real ledger and broker: typed outcomes,
what each call reads and changes, and that Kafka is touched only when needed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg2
import psycopg2.extensions
import pytest

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import (
    EpochOfAnotherPipeline,
    EpochProtocol,
    IllegalTransition,
    InvalidRanges,
    Ledger,
)
from airflow_provider_eo.ledger.model.epoch import PartitionRange
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.ledger.planning.backfill_request import ExplicitRanges, OffsetWindow
from airflow_provider_eo.ledger.planning.fencing import AlreadyDone, Fenced, WriteLease
from airflow_provider_eo.ledger.planning.recovery_plan import Action
from airflow_provider_eo.ledger.protocol import (
    AlreadyCommitted,
    AlreadyWritten,
    NothingToReserve,
    Reserved,
)
from eo_devtools.ledger_direct import reserve_stream_epoch, rotate_fencing_token
from tests.conftest import StackInfo
from tests.integration.ledger_support import make_spec
from tests.kafka_helpers import created_topic, delete_records_before, produce

pytestmark = pytest.mark.integration
RUN = RunIdentity("eo_stream__p", "run-1")


class CountingConnection(psycopg2.extensions.connection):
    """A psycopg2 connection that counts the transactions it commits."""

    commits = 0

    def commit(self) -> None:
        type(self).commits += 1
        super().commit()


@pytest.fixture(scope="module")
def topic(stack: StackInfo) -> Iterator[str]:
    """Two partitions holding 3 and 2 records."""
    with created_topic(stack.kafka_bootstrap, partitions=2, prefix="protocol") as name:
        produce(stack.kafka_bootstrap, name, [(f"a{i}", "{}") for i in range(3)], partition=0)
        produce(stack.kafka_bootstrap, name, [(f"b{i}", "{}") for i in range(2)], partition=1)
        yield name


def no_kafka() -> Any:
    raise AssertionError("this call must not connect to Kafka")


def test_stream_epoch_life_with_typed_outcomes(ledger: Ledger, hook: EoKafkaHook, topic: str) -> None:
    spec = make_spec(topics=[topic])
    protocol = EpochProtocol(ledger, kafka=lambda: hook)
    reservation = protocol.reserve_stream(spec, RUN)
    assert isinstance(reservation, Reserved)
    epoch = reservation.epoch
    assert [(r.partition, r.start, r.end) for r in epoch.ranges] == [(0, 0, 3), (1, 0, 2)]
    assert protocol.reserve_stream(spec, RUN) == reservation  # a retry of the run: the same epoch

    writer = EpochProtocol(ledger, kafka=no_kafka)  # the Spark driver never needs Kafka
    lease = writer.begin_write(spec.name, epoch.epoch_id, epoch.fencing_token)
    assert lease == WriteLease(epoch, epoch.fencing_token)
    voted = writer.vote(lease, {"records": 5})
    assert (voted.state, voted.metrics) == (EpochState.WRITTEN, {"records": 5})  # type: ignore[union-attr]
    assert writer.begin_write(spec.name, epoch.epoch_id, epoch.fencing_token) == AlreadyDone(voted)  # type: ignore[arg-type]

    looked_up: list[str] = []

    def spec_of(pipeline: str) -> PipelineSpec:
        looked_up.append(pipeline)
        return spec

    committed = protocol.commit(epoch.epoch_id, pipeline=spec_of)
    assert (committed.epoch.state, committed.group_id, looked_up) == (
        EpochState.COMMITTED,
        spec.group_id,
        [spec.name],
    )
    assert committed.published == {(topic, 0): 3, (topic, 1): 2}
    assert hook.committed_offsets(spec.group_id, [(topic, 0), (topic, 1)]) == {(topic, 0): 3, (topic, 1): 2}
    again = EpochProtocol(ledger, kafka=no_kafka).commit(epoch.epoch_id, pipeline=spec)
    assert (again.already_committed, again.published, again.group_id) == (True, {}, None)
    assert protocol.reserve_stream(spec, RunIdentity("eo_stream__p", "run-2")) == NothingToReserve(
        spec.name, "no new data, no epoch opened"
    )


def test_commit_reads_the_epoch_once_then_marks_it(ledger_dsn: str, hook: EoKafkaHook, topic: str) -> None:
    spec = make_spec(topics=[topic])
    with Ledger(ledger_dsn) as ledger:
        epoch = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r")
        assert epoch is not None
        ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
    counting = Ledger(lambda: psycopg2.connect(ledger_dsn, connection_factory=CountingConnection))
    with counting:
        counting.get_epoch(epoch.epoch_id)  # opens (and migrates) the connection first
        CountingConnection.commits = 0
        EpochProtocol(counting, kafka=lambda: hook).commit(epoch.epoch_id, pipeline=spec)
    # one read before publishing, one guarded UPDATE after, then the commit's lag sample
    assert CountingConnection.commits == 3


def test_fenced_writers_and_foreign_epochs_change_nothing(
    ledger: Ledger, hook: EoKafkaHook, topic: str
) -> None:
    spec = make_spec(topics=[topic])
    protocol = EpochProtocol(ledger, kafka=lambda: hook)
    reservation = protocol.reserve_stream(spec, RUN)
    assert isinstance(reservation, Reserved)
    epoch = reservation.epoch
    zombie = protocol.begin_write(spec.name, epoch.epoch_id, epoch.fencing_token)
    assert isinstance(zombie, WriteLease)
    new_token = rotate_fencing_token(ledger, epoch.epoch_id)
    stale = protocol.begin_write(spec.name, epoch.epoch_id, epoch.fencing_token)
    assert isinstance(stale, Fenced) and stale.token_mismatch
    vote = protocol.vote(zombie, {"records": 99})
    assert isinstance(vote, Fenced) and vote.token_mismatch
    with pytest.raises(EpochOfAnotherPipeline, match=f"epoch {epoch.epoch_id} belongs to pipeline"):
        protocol.begin_write("another", epoch.epoch_id, new_token)
    with pytest.raises(IllegalTransition, match="the epoch has not been written yet"):
        protocol.commit(epoch.epoch_id, pipeline=no_kafka)
    unchanged = ledger.get_epoch(epoch.epoch_id)
    assert (unchanged.state, unchanged.metrics, unchanged.fencing_token) == (
        EpochState.RESERVED,
        None,
        new_token,
    )
    aborted = protocol.abort(epoch.epoch_id, "test")
    fenced = protocol.vote(WriteLease(epoch, new_token), {})
    assert fenced == Fenced(aborted, token_mismatch=False)


def test_backfill_reserve_release_and_recover(ledger: Ledger, hook: EoKafkaHook, topic: str) -> None:
    spec = make_spec(topics=[topic])
    protocol = EpochProtocol(ledger, kafka=lambda: hook)
    backfill_run = RunIdentity("eo_backfill__p", "bf-1")
    request = ExplicitRanges((PartitionRange(topic, 0, 1, 3),))
    first = protocol.reserve_backfill(spec, request, backfill_run)
    second = protocol.reserve_backfill(spec, OffsetWindow(start_offset=0), RunIdentity("x", "bf-2"))
    assert isinstance(first, Reserved) and isinstance(second, Reserved)
    assert [(r.partition, r.start, r.end) for r in first.epoch.ranges] == [(0, 1, 3)]
    assert [(r.partition, r.start, r.end) for r in second.epoch.ranges] == [(0, 0, 3), (1, 0, 2)]
    ledger.vote_written(first.epoch.epoch_id, first.epoch.fencing_token, {})

    released = protocol.release(spec, backfill_run)
    assert released.plan.ids(Action.COMMIT) == [first.epoch.epoch_id]
    assert ledger.get_epoch(first.epoch.epoch_id).state is EpochState.COMMITTED
    assert hook.committed_offsets(spec.group_id, [(topic, 0)]) == {
        (topic, 0): None
    }  # backfills never publish

    settled = protocol.recover(spec, RUN, lambda run: run.run_id == "bf-2")
    assert (settled.plan.ids(Action.KEEP), settled.plan.ids(Action.ABORT)) == ([second.epoch.epoch_id], [])
    settled = protocol.recover(spec, RUN, lambda run: False)
    assert settled.plan.ids(Action.ABORT) == [second.epoch.epoch_id]
    assert ledger.get_epoch(second.epoch.epoch_id).error == (
        "recovery by eo_stream__p/run-1: owning run x/bf-2 is not live"
    )


def test_a_retried_chunk_comes_back_as_written_then_committed_even_after_retention(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory()
    produce(stack.kafka_bootstrap, topic, [(f"k{i}", "{}") for i in range(6)], partition=0)
    spec = make_spec(topics=[topic])
    protocol = EpochProtocol(ledger, kafka=lambda: hook)
    run = RunIdentity("eo_backfill__p", "bf-retry")
    chunk = ExplicitRanges((PartitionRange(topic, 0, 1, 4),))
    first = protocol.reserve_backfill(spec, chunk, run)
    assert isinstance(first, Reserved)
    voted = ledger.vote_written(first.epoch.epoch_id, first.epoch.fencing_token, {})
    assert protocol.reserve_backfill(spec, chunk, run) == AlreadyWritten(voted)
    committed = protocol.commit(first.epoch.epoch_id, pipeline=spec).epoch
    assert (
        delete_records_before(stack.kafka_bootstrap, topic, 0, 3) == 3
    )  # retention passed the chunk's start
    assert protocol.reserve_backfill(spec, chunk, run) == AlreadyCommitted(committed)
    with pytest.raises(InvalidRanges, match=r"outside the available offsets \[3, 6\)"):
        protocol.reserve_backfill(spec, chunk, RunIdentity("eo_backfill__p", "another-run"))
    assert [e.epoch_id for e in ledger.epochs(EpochFilter(pipeline=spec.name))] == [first.epoch.epoch_id]
