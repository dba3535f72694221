"""Stream reservation rules (docs/DESIGN.md section 2 step 1) on real topics through ``EoKafkaHook``.

Starting offsets (group, earliest, latest, timestamp), conflicts, caps, the commit that
publishes exact ends, and a topic deleted and recreated. Retention gaps are in
``test_ledger_retention.py``, partition discovery in ``test_ledger_discovery.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import (
    CursorBeyondHighWatermark,
    EpochState,
    Ledger,
    OpenEpochConflict,
)
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.protocol import EpochProtocol
from eo_devtools.ledger_direct import partition_pins, reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import make_spec, ranges_of, run_epoch
from tests.kafka_helpers import delete_records_before, produce, recent_timestamp_ms

pytestmark = pytest.mark.integration


def fill(stack: StackInfo, topic: str, partition: int, n: int, timestamps: list[int] | None = None) -> None:
    produce(
        stack.kafka_bootstrap,
        topic,
        [(f"k{i}", f'{{"i": {i}}}') for i in range(n)],
        partition=partition,
        timestamps=timestamps,
    )


def pins(ledger: Ledger, pipeline: str) -> list[tuple[str, int, int, str]]:
    return [
        (tp[0], tp[1], offset, source) for tp, (offset, source) in partition_pins(ledger, pipeline).items()
    ]


def test_first_epoch_starts_at_existing_group_offsets(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=2)
    fill(stack, topic, 0, 10)
    fill(stack, topic, 1, 4)
    spec = make_spec(topics=[topic], policy="latest")
    hook.commit_offsets(spec.group_id, {(topic, 0): 3})
    epoch = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r1")
    assert ranges_of(epoch) == [(topic, 0, 3, 10), (topic, 1, 4, 4)]
    assert pins(ledger, spec.name) == [(topic, 0, 3, "group"), (topic, 1, 4, "latest")]


def test_first_epoch_without_group_offsets_uses_starting_policy(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    """Partition 0: 10 records stamped t0 + 1 s * i (t0: 10 minutes ago), offsets below 2
    deleted (DeleteRecords); partition 1: 6 records stamped t0 + 2 s * i. Each batch holds
    several records, so the broker resolves a timestamp inside a compressed batch."""
    topic = kafka_topic_factory(partitions=2)
    t0 = recent_timestamp_ms()
    fill(stack, topic, 0, 10, [t0 + 1000 * i for i in range(10)])
    fill(stack, topic, 1, 6, [t0 + 2000 * i for i in range(6)])
    assert delete_records_before(stack.kafka_bootstrap, topic, 0, 2) == 2

    def first_ranges(**starting: object) -> list[tuple[str, int, int, int]]:
        spec = make_spec(topics=[topic], **starting)  # type: ignore[arg-type]
        return ranges_of(reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r"))

    assert first_ranges(policy="earliest") == [(topic, 0, 2, 10), (topic, 1, 0, 6)]
    # the first record stamped at or after the configured time: 7 (t0+7s) and 4 (t0+8s)
    between = make_spec(topics=[topic], policy="timestamp", timestamp_ms=t0 + 6500)
    assert ranges_of(reserve_stream_epoch(ledger, between, hook, dag_id="d", run_id="r")) == [
        (topic, 0, 7, 10),
        (topic, 1, 4, 6),
    ]
    assert pins(ledger, between.name) == [(topic, 0, 7, "timestamp"), (topic, 1, 4, "timestamp")]
    # a record stamped exactly at the time is included
    assert first_ranges(policy="timestamp", timestamp_ms=t0 + 6000) == [(topic, 0, 6, 10), (topic, 1, 3, 6)]
    # before every record: the first offset still held (2 on partition 0: 0 and 1 are deleted)
    assert first_ranges(policy="timestamp", timestamp_ms=t0 - 1) == [(topic, 0, 2, 10), (topic, 1, 0, 6)]
    # after every record: pinned at the high watermarks, nothing to read, no epoch
    after = make_spec(topics=[topic], policy="timestamp", timestamp_ms=t0 + 60_000)
    assert reserve_stream_epoch(ledger, after, hook, dag_id="d", run_id="r") is None
    assert pins(ledger, after.name) == [(topic, 0, 10, "timestamp"), (topic, 1, 6, "timestamp")]


def test_latest_policy_pin_survives_a_skipped_run(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1)
    fill(stack, topic, 0, 5)
    spec = make_spec(topics=[topic], policy="latest")
    assert reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r1") is None
    assert ledger.open_epochs(spec.name) == []
    fill(stack, topic, 0, 3)
    epoch = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r2")
    assert ranges_of(epoch) == [(topic, 0, 5, 8)]


def test_same_run_gets_its_open_epoch_back_and_another_run_conflicts(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1)
    fill(stack, topic, 0, 5)
    spec = make_spec(topics=[topic])
    epoch = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r1")
    assert epoch is not None
    fill(stack, topic, 0, 5)
    assert reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r1") == epoch
    assert ranges_of(epoch) == [(topic, 0, 0, 5)]
    with pytest.raises(OpenEpochConflict) as info:
        reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r2")
    assert str(info.value) == (
        f"pipeline {spec.name!r} already has open epoch {epoch.epoch_id} (RESERVED) "
        "owned by dag_id='d' run_id='r1'"
    )


def test_reserve_commit_publishes_exact_ends(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=2)
    fill(stack, topic, 0, 3)
    fill(stack, topic, 1, 2)
    spec = make_spec(topics=[topic])

    def run(run_id: str) -> list[tuple[str, int, int, int]]:
        epoch = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id=run_id)
        if epoch is not None:
            ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
            EpochProtocol(ledger, kafka=lambda: hook).commit(epoch.epoch_id, pipeline=spec)
            assert ledger.get_epoch(epoch.epoch_id).state is EpochState.COMMITTED
        return ranges_of(epoch)

    assert run("r1") == [(topic, 0, 0, 3), (topic, 1, 0, 2)]
    assert hook.committed_offsets(spec.group_id, [(topic, 0), (topic, 1)]) == {(topic, 0): 3, (topic, 1): 2}
    assert run("r2") == []
    fill(stack, topic, 1, 4)
    assert run("r3") == [(topic, 0, 3, 3), (topic, 1, 2, 6)]
    assert hook.committed_offsets(spec.group_id, [(topic, 0), (topic, 1)]) == {(topic, 0): 3, (topic, 1): 6}


def test_topic_deleted_and_recreated_is_a_clear_error(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1)
    fill(stack, topic, 0, 5)
    spec = make_spec(topics=[topic])
    assert ranges_of(run_epoch(ledger, spec, hook, "r1")) == [(topic, 0, 0, 5)]
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.delete_topics([topic])[topic].result(timeout=15)
    recreate(admin, topic)
    fill(stack, topic, 0, 2)
    with pytest.raises(CursorBeyondHighWatermark) as info:
        reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r2")
    assert str(info.value) == (
        f"cursor of {topic}[0] is 5 but its high watermark is 2: the topic was probably deleted and "
        "recreated; the ledger will not guess where to resume"
    )
    assert ledger.open_epochs(spec.name) == []


def recreate(admin: AdminClient, topic: str, timeout_s: float = 30) -> None:
    """Create ``topic`` again, retrying (at most ``timeout_s``) while the broker finishes the deletion."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(
                timeout=15
            )
            return
        except Exception as exc:
            if time.monotonic() > deadline:
                raise AssertionError(f"could not recreate {topic} within {timeout_s:g}s: {exc}") from exc
            time.sleep(0.1)


def test_caps_split_proportionally_with_exact_numbers(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=4)
    for partition, count in enumerate([100, 10, 1]):
        fill(stack, topic, partition, count)
    spec = make_spec(topics=[topic], per_partition=50, total=30)
    epoch = run_epoch(ledger, spec, hook, "r1")
    # sizes after the per-partition cap: 50, 10, 1, 0 -> 1 each + 27 shared by (49, 9, 0)
    assert ranges_of(epoch) == [(topic, 0, 0, 24), (topic, 1, 0, 5), (topic, 2, 0, 1), (topic, 3, 0, 0)]
    # left: 76, 5 -> capped 50, 5 -> 1 each + 28 shared by (49, 4): 25 r47 and 2 r6, +1 to the first
    assert ranges_of(run_epoch(ledger, spec, hook, "r2")) == [
        (topic, 0, 24, 51), (topic, 1, 5, 8), (topic, 2, 1, 1), (topic, 3, 0, 0),
    ]  # fmt: skip
    assert hook.committed_offsets(spec.group_id, [(topic, p) for p in range(4)]) == {
        (topic, 0): 51, (topic, 1): 8, (topic, 2): 1, (topic, 3): 0,
    }  # fmt: skip


def test_no_matching_partitions_opens_nothing(ledger: Ledger, hook: EoKafkaHook) -> None:
    spec = make_spec(pattern=r"nothing-matches-this-[0-9a-f]{32}")
    assert reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r") is None
    assert ledger.epochs(EpochFilter(pipeline=spec.name)) == []
    assert partition_pins(ledger, spec.name) == {}
