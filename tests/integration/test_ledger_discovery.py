"""Partition discovery on the real broker: a live topic grown with CreatePartitions between
epochs, topics matching the pattern created later, and 200 epochs across such growth.

New partitions start at ``starting.new_partitions`` (earliest: offset 0; latest: the high
watermark when the partition is first seen) and the committed ranges stay contiguous.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Epoch, EpochKind, EpochState, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from eo_devtools.ledger_direct import partition_pins, reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import (
    TP,
    assert_contiguous,
    make_spec,
    ranges_of,
    run_epoch,
)
from tests.kafka_helpers import RecordSender, grow_partitions, produce

pytestmark = pytest.mark.integration


def fill(stack: StackInfo, topic: str, partition: int, n: int) -> None:
    produce(stack.kafka_bootstrap, topic, [(f"k{i}", f"v{i}") for i in range(n)], partition=partition)


def pins(ledger: Ledger, pipeline: str) -> list[tuple[str, int, int, str]]:
    return [
        (tp[0], tp[1], offset, source) for tp, (offset, source) in partition_pins(ledger, pipeline).items()
    ]


def committed_stream(ledger: Ledger, pipeline: str) -> list[Epoch]:
    return ledger.epochs(
        EpochFilter(pipeline=pipeline, states=frozenset({EpochState.COMMITTED}), kind=EpochKind.STREAM)
    )


def test_partitions_added_to_a_live_topic_join_at_the_new_partition_policy(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="grow")
    fill(stack, topic, 0, 3)
    fill(stack, topic, 1, 3)
    early = make_spec(topics=[topic], policy="earliest", new_partitions="earliest")
    late = make_spec(topics=[topic], policy="earliest", new_partitions="latest")
    for spec in (early, late):
        assert ranges_of(run_epoch(ledger, spec, hook, "r1")) == [(topic, 0, 0, 3), (topic, 1, 0, 3)]

    grow_partitions(stack.kafka_bootstrap, topic, 4)
    assert hook.list_partitions([topic], None) == [(topic, p) for p in range(4)]
    fill(stack, topic, 2, 4)  # partition 3 stays empty
    fill(stack, topic, 0, 1)
    assert ranges_of(run_epoch(ledger, early, hook, "r2")) == [
        (topic, 0, 3, 4), (topic, 1, 3, 3), (topic, 2, 0, 4), (topic, 3, 0, 0),
    ]  # fmt: skip
    # latest: the 4 records already in partition 2 when it is first seen are not read
    assert ranges_of(run_epoch(ledger, late, hook, "r2")) == [
        (topic, 0, 3, 4), (topic, 1, 3, 3), (topic, 2, 4, 4), (topic, 3, 0, 0),
    ]  # fmt: skip
    assert pins(ledger, early.name) == [(topic, p, 0, "earliest") for p in range(4)]
    assert pins(ledger, late.name) == [
        (topic, 0, 0, "earliest"), (topic, 1, 0, "earliest"),
        (topic, 2, 4, "latest"), (topic, 3, 0, "latest"),
    ]  # fmt: skip

    fill(stack, topic, 2, 2)
    fill(stack, topic, 3, 1)
    for spec in (early, late):
        assert ranges_of(run_epoch(ledger, spec, hook, "r3")) == [
            (topic, 0, 4, 4), (topic, 1, 3, 3), (topic, 2, 4, 6), (topic, 3, 0, 1),
        ]  # fmt: skip
    ends = {(topic, 0): 4, (topic, 1): 3, (topic, 2): 6, (topic, 3): 1}
    for spec, first in ((early, 0), (late, {**dict.fromkeys(ends, 0), (topic, 2): 4})):
        assert ledger.cursors(spec.name) == ends
        assert hook.committed_offsets(spec.group_id, list(ends)) == ends
        assert_contiguous(committed_stream(ledger, spec.name), ends, first)


def test_topics_matching_the_pattern_join_at_the_new_partition_policy(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    prefix = f"in{uuid.uuid4().hex[:8]}"
    in_a = kafka_topic_factory(partitions=1, prefix=f"{prefix}-a")
    fill(stack, in_a, 0, 2)
    early = make_spec(pattern=rf"{prefix}-.*", policy="latest", new_partitions="earliest")
    late = make_spec(pattern=rf"{prefix}-.*", policy="earliest", new_partitions="latest")
    assert run_epoch(ledger, early, hook, "r1") is None  # latest: pinned at 2, nothing new
    assert ranges_of(run_epoch(ledger, late, hook, "r1")) == [(in_a, 0, 0, 2)]
    in_b = kafka_topic_factory(partitions=2, prefix=f"{prefix}-b")
    fill(stack, in_b, 1, 6)
    assert ranges_of(run_epoch(ledger, early, hook, "r2")) == [
        (in_a, 0, 2, 2),
        (in_b, 0, 0, 0),
        (in_b, 1, 0, 6),
    ]
    assert run_epoch(ledger, late, hook, "r2") is None
    assert pins(ledger, late.name) == [
        (in_a, 0, 0, "earliest"),
        (in_b, 0, 0, "latest"),
        (in_b, 1, 6, "latest"),
    ]
    assert ledger.cursors(early.name) == {(in_a, 0): 2, (in_b, 0): 0, (in_b, 1): 6}
    assert hook.committed_offsets(early.group_id, [(in_a, 0), (in_b, 0), (in_b, 1)]) == {
        (in_a, 0): 2,
        (in_b, 0): 0,
        (in_b, 1): 6,
    }


def test_200_epochs_with_growing_partitions_stay_contiguous(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    """Random small loads into a pattern's topics, capped epochs, every 13th run a reservation
    that fails and is aborted; a topic joins at run 50 and 150, the first topic grows from
    2 to 4 partitions (CreatePartitions) at run 100. Every record ends in exactly one
    committed epoch and the group holds exactly the cursors."""
    prefix = f"grow{uuid.uuid4().hex[:8]}"
    spec = make_spec(pattern=rf"{prefix}-.*", per_partition=4, total=9)
    grow_a = kafka_topic_factory(partitions=2, prefix=f"{prefix}-a")
    produced: dict[TP, int] = {(grow_a, 0): 0, (grow_a, 1): 0}
    joins = {50: ("b", 3), 150: ("c", 1)}  # run -> topic suffix, partitions
    rng = random.Random(42)
    sender = RecordSender(stack.kafka_bootstrap)
    committed = 0
    for i in range(400):
        if committed >= 200:
            break
        if i in joins:
            suffix, partitions = joins[i]
            topic = kafka_topic_factory(partitions=partitions, prefix=f"{prefix}-{suffix}")
            produced |= {(topic, p): 0 for p in range(partitions)}
            sender = RecordSender(stack.kafka_bootstrap)  # fresh metadata for the new partitions
        if i == 100:
            grow_partitions(stack.kafka_bootstrap, grow_a, 4)
            produced |= {(grow_a, 2): 0, (grow_a, 3): 0}
            sender = RecordSender(stack.kafka_bootstrap)
        for topic, partition in produced:
            for _ in range(rng.choice([0, 0, 1, 3])):
                sender.send(topic, f"k{produced[(topic, partition)]}", f"i{i}", partition=partition)
                produced[(topic, partition)] += 1
        sender.flush()
        if i % 13 == 7:
            doomed = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id=f"doomed-{i}")
            if doomed is not None:
                ledger.abort(doomed.epoch_id, "simulated failure")
        committed += run_epoch(ledger, spec, hook, f"run-{i}") is not None
    while run_epoch(ledger, spec, hook, f"drain-{committed}") is not None:
        committed += 1
    assert committed >= 200
    assert len(produced) == 8  # a: 4 partitions, b: 3, c: 1
    cursors = ledger.cursors(spec.name)
    assert cursors == produced
    assert {tp: high for tp, (_, high) in hook.watermarks(produced).items()} == produced
    epochs = committed_stream(ledger, spec.name)
    assert len(epochs) == committed
    assert_contiguous(epochs, cursors)
    assert hook.committed_offsets(spec.group_id, produced) == cursors
