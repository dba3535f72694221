"""Retention gaps made for real: DeleteRecords moves a partition's low watermark above the
ledger cursor, and each ``on_data_loss`` policy answers with exact ledger rows."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import DataLossError, EpochKind, EpochState, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from eo_devtools.ledger_direct import partition_pins, reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import make_spec, ranges_of, run_epoch
from tests.kafka_helpers import delete_records_before, produce

pytestmark = pytest.mark.integration


def fill(stack: StackInfo, topic: str, partition: int, n: int) -> None:
    produce(stack.kafka_bootstrap, topic, [(f"k{i}", f"v{i}") for i in range(n)], partition=partition)


def test_retention_gap_fails_by_default(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="gap-fail")
    fill(stack, topic, 0, 5)
    spec = make_spec(topics=[topic])
    assert ranges_of(run_epoch(ledger, spec, hook, "r1")) == [(topic, 0, 0, 5)]
    fill(stack, topic, 0, 5)
    assert delete_records_before(stack.kafka_bootstrap, topic, 0, 8) == 8
    assert hook.watermarks([(topic, 0)]) == {(topic, 0): (8, 10)}
    with pytest.raises(DataLossError) as info:
        reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r2")
    assert str(info.value) == (
        f"data loss on {topic}[0]: next offset is 5 but the low watermark is 8; offsets [5, 8) (3 records) "
        "were deleted before they were read. Set on_data_loss: record_gap to skip them with a recorded gap."
    )
    assert (info.value.topic, info.value.partition, info.value.expected_start, info.value.low_watermark) == (
        topic, 0, 5, 8,
    )  # fmt: skip
    assert ledger.open_epochs(spec.name) == []
    assert ledger.gaps(spec.name) == []
    assert ledger.cursors(spec.name) == {(topic, 0): 5}
    assert hook.committed_offsets(spec.group_id, [(topic, 0)]) == {(topic, 0): 5}
    # it stays an error: nothing is skipped silently on a later run
    with pytest.raises(DataLossError):
        reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r3")
    assert ledger.cursors(spec.name) == {(topic, 0): 5}


def test_retention_gap_recorded_when_the_pipeline_says_so(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="gap-rec")
    fill(stack, topic, 0, 5)
    fill(stack, topic, 1, 1)
    spec = make_spec(topics=[topic], on_data_loss="record_gap")
    first = run_epoch(ledger, spec, hook, "r1")
    assert ranges_of(first) == [(topic, 0, 0, 5), (topic, 1, 0, 1)]
    fill(stack, topic, 0, 5)
    assert delete_records_before(stack.kafka_bootstrap, topic, 0, 8) == 8
    epoch = run_epoch(ledger, spec, hook, "r2")
    assert epoch is not None
    assert ranges_of(epoch) == [(topic, 0, 8, 10), (topic, 1, 1, 1)]
    assert ledger.gaps(spec.name) == [
        {
            "topic": topic,
            "partition": 0,
            "start": 5,
            "end": 8,
            "epoch_id": epoch.epoch_id,
            "reason": "retention",
        }
    ]
    assert ledger.cursors(spec.name) == {(topic, 0): 10, (topic, 1): 1}
    assert hook.committed_offsets(spec.group_id, [(topic, 0), (topic, 1)]) == {(topic, 0): 10, (topic, 1): 1}
    # and it continues: the next epoch starts at the cursor, no second gap
    fill(stack, topic, 0, 2)
    third = run_epoch(ledger, spec, hook, "r3")
    assert ranges_of(third) == [(topic, 0, 10, 12), (topic, 1, 1, 1)]
    assert len(ledger.gaps(spec.name)) == 1
    committed = ledger.epochs(
        EpochFilter(pipeline=spec.name, states=frozenset({EpochState.COMMITTED}), kind=EpochKind.STREAM)
    )
    assert [ranges_of(e)[0][2:] for e in committed] == [(0, 5), (8, 10), (10, 12)]


def test_everything_deleted_records_the_gap_without_an_epoch(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    """DeleteRecords up to the high watermark: low == high, nothing to read. The gap is
    still recorded (no epoch to attach it to) and the cursor moves past it."""
    topic = kafka_topic_factory(partitions=1, prefix="gap-all")
    fill(stack, topic, 0, 3)
    spec = make_spec(topics=[topic], on_data_loss="record_gap")
    assert ranges_of(run_epoch(ledger, spec, hook, "r1")) == [(topic, 0, 0, 3)]
    fill(stack, topic, 0, 4)
    assert delete_records_before(stack.kafka_bootstrap, topic, 0, 7) == 7
    assert hook.watermarks([(topic, 0)]) == {(topic, 0): (7, 7)}
    assert run_epoch(ledger, spec, hook, "r2") is None
    assert ledger.gaps(spec.name) == [
        {"topic": topic, "partition": 0, "start": 3, "end": 7, "epoch_id": None, "reason": "retention"}
    ]
    assert ledger.cursors(spec.name) == {(topic, 0): 7}
    assert ledger.open_epochs(spec.name) == []
    fill(stack, topic, 0, 1)
    assert ranges_of(run_epoch(ledger, spec, hook, "r3")) == [(topic, 0, 7, 8)]


def test_group_offset_below_the_low_watermark_is_data_loss_and_stays_pinned(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    """A migrating consumer group whose committed offset was since deleted: the first
    reservation pins the group offset, then refuses with the gap (never clamps silently)."""
    topic = kafka_topic_factory(partitions=1, prefix="gap-group")
    fill(stack, topic, 0, 10)
    spec = make_spec(topics=[topic])
    hook.commit_offsets(spec.group_id, {(topic, 0): 1})
    assert delete_records_before(stack.kafka_bootstrap, topic, 0, 3) == 3
    with pytest.raises(DataLossError, match=rf"^data loss on {topic}\[0\]: next offset is 1 but the low "):
        reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r1")
    assert partition_pins(ledger, spec.name) == {(topic, 0): (1, "group")}
    assert ledger.epochs(EpochFilter(pipeline=spec.name)) == []
    lenient = make_spec(spec.name, topics=[topic], on_data_loss="record_gap")
    epoch = run_epoch(ledger, lenient, hook, "r2")
    assert epoch is not None and ranges_of(epoch) == [(topic, 0, 3, 10)]
    assert ledger.gaps(spec.name) == [
        {
            "topic": topic,
            "partition": 0,
            "start": 1,
            "end": 3,
            "epoch_id": epoch.epoch_id,
            "reason": "retention",
        }
    ]
