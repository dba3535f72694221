"""``EpochProtocol``'s decisions (tests/protocol_decisions.py) on the PostgreSQL ledger and
the real Kafka broker of the shared stack: the same tests, with the same expected outcomes,
as on the in-memory store (tests/unit/test_protocol_decisions.py). Each test gets its own
pipeline and topic in one scratch database; epochs are seeded by the protocol's own
reservation transactions (``eo_devtools.ledger_direct``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.protocol import EpochProtocol
from airflow_provider_eo.ledger.store.postgres_ledger import Ledger
from eo_devtools.ledger_direct import reserve_backfill_epoch, reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, make_spec, stack_kafka_hook
from tests.kafka_helpers import created_topic, produce
from tests.protocol_decisions import ProtocolDecisions

pytestmark = pytest.mark.integration


@dataclass
class PostgresWorld:
    """A :class:`~tests.protocol_decisions.DecisionWorld` on PostgreSQL and the real broker."""

    spec: PipelineSpec
    store: Ledger
    kafka: EoKafkaHook
    protocol: EpochProtocol
    bootstrap: str
    tp: TopicPartition = field(default=("", 0))
    backfills: int = 0

    def stream_epoch(self, run: RunIdentity) -> Epoch:
        topic, partition = self.tp
        produce(self.bootstrap, topic, [(f"k{i}", "v") for i in range(3)], partition=partition)
        epoch = reserve_stream_epoch(self.store, self.spec, self.kafka, dag_id=run.dag_id, run_id=run.run_id)
        assert epoch is not None
        return epoch

    def backfill_epoch(self, run: RunIdentity) -> Epoch:
        self.backfills += 1
        first = 1000 * self.backfills
        ranges = [PartitionRange(self.tp[0], self.tp[1], first, first + 3)]
        return reserve_backfill_epoch(self.store, self.spec, ranges, dag_id=run.dag_id, run_id=run.run_id)


@pytest.fixture(scope="module")
def ledger_dsn(stack: StackInfo) -> Iterator[str]:
    with fresh_database(stack.ledger_dsn) as dsn:
        yield dsn


@pytest.fixture(scope="module")
def kafka(stack: StackInfo) -> EoKafkaHook:
    return stack_kafka_hook(stack)


class TestProtocolDecisionsOnPostgres(ProtocolDecisions):
    @pytest.fixture
    def world(self, stack: StackInfo, ledger_dsn: str, kafka: EoKafkaHook) -> Iterator[PostgresWorld]:
        with created_topic(stack.kafka_bootstrap) as topic, Ledger(ledger_dsn) as ledger:
            spec = make_spec(topics=(topic,))
            protocol = EpochProtocol(ledger, kafka=lambda: kafka)
            yield PostgresWorld(spec, ledger, kafka, protocol, stack.kafka_bootstrap, (topic, 0))
