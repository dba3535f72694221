"""``EpochProtocol``'s decisions (tests/protocol_decisions.py) on the in-memory store
(tests/memory_protocol_store.py), with Kafka an in-memory offsets recorder; the same tests
on PostgreSQL and the real broker: tests/integration/test_protocol_decisions_postgres.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.ledger.protocol import EpochProtocol
from tests.memory_protocol_store import MemoryProtocolStore
from tests.protocol_decisions import RUN, ProtocolDecisions, in_state

TOPIC = "events"


@dataclass
class OffsetsRecorder:
    """Kafka as the protocol's decisions need it, in memory: each partition's high
    watermark (what was "produced") and each group's committed offsets (what commits
    published). Not a broker: the PostgreSQL variant runs the same tests on the real one."""

    highs: dict[TopicPartition, int] = field(default_factory=dict)
    groups: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)

    def list_partitions(self, topics: Sequence[str], pattern: str | None) -> list[TopicPartition]:
        return sorted(tp for tp in self.highs if tp[0] in topics)

    def watermarks(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        return {tp: (0, self.highs.get(tp, 0)) for tp in tps}

    def offsets_for_timestamp(self, tps: Iterable[TopicPartition], ts_ms: int) -> dict[TopicPartition, int]:
        raise NotImplementedError("the decisions tested read no timestamp")

    def committed_offsets(
        self, group_id: str, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        return {tp: self.groups.get(group_id, {}).get(tp) for tp in tps}

    def commit_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        self.groups.setdefault(group_id, {}).update(offsets)


@dataclass
class MemoryWorld:
    """A :class:`~tests.protocol_decisions.DecisionWorld` in memory."""

    spec: PipelineSpec
    store: MemoryProtocolStore
    kafka: OffsetsRecorder
    protocol: EpochProtocol
    tp: TopicPartition = (TOPIC, 0)
    backfills: int = 0

    def stream_epoch(self, run: RunIdentity) -> Epoch:
        self.kafka.highs[self.tp] = self.kafka.highs.get(self.tp, 0) + 3
        start = self.store.cursors(self.spec.name).get(self.tp, 0)
        ranges = [PartitionRange(TOPIC, 0, start, self.kafka.highs[self.tp])]
        return self.store.reserve(self.spec.name, EpochKind.STREAM, run, ranges)

    def backfill_epoch(self, run: RunIdentity) -> Epoch:
        self.backfills += 1
        first = 1000 * self.backfills
        ranges = [PartitionRange(TOPIC, 0, first, first + 3)]
        return self.store.reserve(self.spec.name, EpochKind.BACKFILL, run, ranges)


def memory_world() -> MemoryWorld:
    spec = PipelineSpec(
        name="p", topics=(TOPIC,), topic_pattern=None, group_id="g-p", hbase_table="tbl", column_family="d"
    )
    store, kafka = MemoryProtocolStore(Actor("task", "eo_stream__p/run-1/commit/1")), OffsetsRecorder()
    return MemoryWorld(spec, store, kafka, EpochProtocol(store, kafka=lambda: kafka))


class TestProtocolDecisionsInMemory(ProtocolDecisions):
    @pytest.fixture
    def world(self) -> MemoryWorld:
        return memory_world()


# -- what only the in-memory store shows ----------------------------------------------


def test_recovery_records_its_changes_as_recovery_by_the_ledgers_actor() -> None:
    world = memory_world()
    written = in_state(world, EpochState.WRITTEN)
    dead = world.backfill_epoch(RunIdentity("d", "dead"))
    world.protocol.recover(world.spec, RUN, lambda run: False)
    assert world.store.changes[-2:] == [
        (written.epoch_id, EpochState.COMMITTED, "eo_stream__p/run-1/commit/1"),
        (dead.epoch_id, EpochState.ABORTED, "eo_stream__p/run-1/commit/1"),
    ]
    assert world.store.actor == Actor("task", "eo_stream__p/run-1/commit/1")


def test_a_stream_commit_stores_its_lag_sample_and_moves_the_cursor() -> None:
    world = memory_world()
    epoch = in_state(world, EpochState.WRITTEN, EpochKind.STREAM)
    world.protocol.commit(epoch.epoch_id, pipeline=world.spec)
    assert world.store.cursors("p") == {(TOPIC, 0): 3}
    [sample] = world.store.lag_samples
    assert (sample.pipeline, sample.source, sample.epoch_id) == ("p", "commit", epoch.epoch_id)
    assert sample.total_lag == 0
