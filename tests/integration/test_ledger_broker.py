"""Stream reservation against the real local broker through ``EoKafkaHook``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import CursorBeyondHighWatermark, Epoch, EpochState, Ledger
from airflow_provider_eo.ledger.commit import commit_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, make_spec, ranges_of
from tests.kafka_helpers import produce

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ledger(stack: StackInfo) -> Iterator[Ledger]:
    with fresh_database(stack.ledger_dsn) as dsn, Ledger(dsn) as instance:
        yield instance


@pytest.fixture(scope="module")
def hook(stack: StackInfo) -> Iterator[EoKafkaHook]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in stack.conn_env.items():
            patch.setenv(name, value)
        yield EoKafkaHook()


def fill(bootstrap: str, topic: str, partition: int, n: int) -> None:
    produce(bootstrap, topic, [(f"k{i}", f'{{"i": {i}}}') for i in range(n)], partition=partition)


def run(ledger: Ledger, hook: EoKafkaHook, spec: PipelineSpec, run_id: str) -> Epoch | None:
    epoch = ledger.reserve_stream_epoch(spec, hook, dag_id="d", run_id=run_id)
    if epoch is not None:
        ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
        commit_epoch(ledger, epoch.epoch_id, hook, spec.group_id)
    return epoch


def test_reserve_commit_publishes_exact_ends(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=2)
    fill(stack.kafka_bootstrap, topic, 0, 3)
    fill(stack.kafka_bootstrap, topic, 1, 2)
    spec = make_spec(topics=[topic])
    first = run(ledger, hook, spec, "r1")
    assert ranges_of(first) == [(topic, 0, 0, 3), (topic, 1, 0, 2)]
    assert hook.committed_offsets(spec.group_id, [(topic, 0), (topic, 1)]) == {(topic, 0): 3, (topic, 1): 2}
    assert run(ledger, hook, spec, "r2") is None
    fill(stack.kafka_bootstrap, topic, 1, 4)
    second = run(ledger, hook, spec, "r3")
    assert ranges_of(second) == [(topic, 0, 3, 3), (topic, 1, 2, 6)]
    assert second is not None and ledger.get_epoch(second.epoch_id).state is EpochState.COMMITTED
    assert hook.committed_offsets(spec.group_id, [(topic, 0), (topic, 1)]) == {(topic, 0): 3, (topic, 1): 6}


def test_first_epoch_from_existing_group_offsets(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=2)
    fill(stack.kafka_bootstrap, topic, 0, 5)
    fill(stack.kafka_bootstrap, topic, 1, 4)
    spec = make_spec(topics=[topic], policy="latest")
    hook.commit_offsets(spec.group_id, {(topic, 0): 2})
    epoch = ledger.reserve_stream_epoch(spec, hook, dag_id="d", run_id="r1")
    assert ranges_of(epoch) == [(topic, 0, 2, 5), (topic, 1, 4, 4)]


def test_latest_pin_survives_skipped_run(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1)
    fill(stack.kafka_bootstrap, topic, 0, 3)
    spec = make_spec(topics=[topic], policy="latest")
    assert run(ledger, hook, spec, "r1") is None
    fill(stack.kafka_bootstrap, topic, 0, 2)
    assert ranges_of(run(ledger, hook, spec, "r2")) == [(topic, 0, 3, 5)]


def test_topics_matching_the_pattern_join_later(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    prefix = f"rx{uuid.uuid4().hex[:8]}"
    first = kafka_topic_factory(partitions=1, prefix=prefix)
    fill(stack.kafka_bootstrap, first, 0, 2)
    spec = make_spec(pattern=rf"{prefix}-.*")
    assert ranges_of(run(ledger, hook, spec, "r1")) == [(first, 0, 0, 2)]
    second = kafka_topic_factory(partitions=2, prefix=prefix)
    fill(stack.kafka_bootstrap, second, 1, 3)
    expected = sorted([(first, 0, 2, 2), (second, 0, 0, 0), (second, 1, 0, 3)])
    assert ranges_of(run(ledger, hook, spec, "r2")) == expected
    assert ledger.cursors(spec.name) == {(first, 0): 2, (second, 0): 0, (second, 1): 3}


def test_topic_deleted_and_recreated_is_a_clear_error(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1)
    fill(stack.kafka_bootstrap, topic, 0, 5)
    spec = make_spec(topics=[topic])
    assert ranges_of(run(ledger, hook, spec, "r1")) == [(topic, 0, 0, 5)]
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.delete_topics([topic])[topic].result(timeout=15)
    recreate(admin, topic)
    fill(stack.kafka_bootstrap, topic, 0, 2)
    with pytest.raises(CursorBeyondHighWatermark) as info:
        ledger.reserve_stream_epoch(spec, hook, dag_id="d", run_id="r2")
    assert str(info.value) == (
        f"cursor of {topic}[0] is 5 but its high watermark is 2: the topic was probably deleted and "
        "recreated; the ledger will not guess where to resume"
    )
    assert ledger.open_epochs(spec.name) == []


def recreate(admin: AdminClient, topic: str) -> None:
    """Create ``topic`` again, retrying while the broker still finishes the deletion."""
    for _ in range(50):
        try:
            admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(
                timeout=15
            )
            return
        except Exception:
            time.sleep(0.1)
    raise AssertionError(f"could not recreate {topic}")
