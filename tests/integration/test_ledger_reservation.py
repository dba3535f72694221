"""Stream reservation rules (DESIGN.md section 2 step 1) with an in-memory offset source.

``FakeOffsetSource`` stands in for what the local broker cannot produce (retention
raising the low watermark, one topic's partition count growing); the same paths run
against the real broker in ``test_ledger_broker.py``.
"""

from __future__ import annotations

import random

import pytest

from airflow_provider_eo.ledger import (
    CursorBeyondHighWatermark,
    DataLossError,
    EpochKind,
    EpochState,
    Ledger,
    OpenEpochConflict,
)
from tests.integration.ledger_support import (
    FakeOffsetSource,
    assert_contiguous,
    make_spec,
    ranges_of,
    run_epoch,
)

pytestmark = pytest.mark.integration


def pins(ledger: Ledger, pipeline: str) -> list[tuple[str, int, int, str]]:
    return [
        (tp[0], tp[1], offset, source) for tp, (offset, source) in ledger.partition_pins(pipeline).items()
    ]


def test_first_epoch_starts_at_existing_group_offsets(ledger: Ledger) -> None:
    spec = make_spec(topics=["t"], policy="latest")
    source = FakeOffsetSource({"t": 2})
    source.produce("t", 0, 10)
    source.produce("t", 1, 4)
    source.commit_offsets(spec.group_id, {("t", 0): 3})
    epoch = ledger.reserve_stream_epoch(spec, source, dag_id="d", run_id="r1")
    assert ranges_of(epoch) == [("t", 0, 3, 10), ("t", 1, 4, 4)]
    assert pins(ledger, spec.name) == [("t", 0, 3, "group"), ("t", 1, 4, "latest")]


def test_first_epoch_without_group_offsets_uses_starting_policy(ledger: Ledger) -> None:
    source = FakeOffsetSource({"t": 1})
    source.set_low("t", 0, 2)
    source.produce("t", 0, 10)
    earliest = make_spec(topics=["t"], policy="earliest")
    timestamp = make_spec(topics=["t"], policy="timestamp", timestamp_ms=6500)
    assert ranges_of(ledger.reserve_stream_epoch(earliest, source, dag_id="d", run_id="r")) == [
        ("t", 0, 2, 10)
    ]
    assert ranges_of(ledger.reserve_stream_epoch(timestamp, source, dag_id="d", run_id="r")) == [
        ("t", 0, 7, 10)
    ]
    assert pins(ledger, timestamp.name) == [("t", 0, 7, "timestamp")]


def test_latest_policy_pin_survives_a_skipped_run(ledger: Ledger) -> None:
    spec = make_spec(topics=["t"], policy="latest")
    source = FakeOffsetSource({"t": 1})
    source.produce("t", 0, 5)
    assert ledger.reserve_stream_epoch(spec, source, dag_id="d", run_id="r1") is None
    assert ledger.open_epochs(spec.name) == []
    source.produce("t", 0, 3)
    epoch = ledger.reserve_stream_epoch(spec, source, dag_id="d", run_id="r2")
    assert ranges_of(epoch) == [("t", 0, 5, 8)]


def test_new_partitions_follow_the_new_partition_policy(ledger: Ledger) -> None:
    source = FakeOffsetSource({"in-a": 1})
    source.produce("in-a", 0, 2)
    early = make_spec(pattern=r"in-.*", policy="latest", new_partitions="earliest")
    late = make_spec(pattern=r"in-.*", policy="earliest", new_partitions="latest")
    assert run_epoch(ledger, early, source, "r1") is None  # latest: pinned at 2, nothing new
    assert ranges_of(run_epoch(ledger, late, source, "r1")) == [("in-a", 0, 0, 2)]
    source.add_partitions("in-b", 2)
    source.produce("in-b", 1, 6)
    assert ranges_of(run_epoch(ledger, early, source, "r2")) == [
        ("in-a", 0, 2, 2),
        ("in-b", 0, 0, 0),
        ("in-b", 1, 0, 6),
    ]
    assert run_epoch(ledger, late, source, "r2") is None
    assert pins(ledger, late.name) == [
        ("in-a", 0, 0, "earliest"),
        ("in-b", 0, 0, "latest"),
        ("in-b", 1, 6, "latest"),
    ]


def test_same_run_gets_its_open_epoch_back_and_another_run_conflicts(ledger: Ledger) -> None:
    spec = make_spec(topics=["t"])
    source = FakeOffsetSource({"t": 1})
    source.produce("t", 0, 5)
    epoch = ledger.reserve_stream_epoch(spec, source, dag_id="d", run_id="r1")
    assert epoch is not None
    source.produce("t", 0, 5)
    assert ledger.reserve_stream_epoch(spec, source, dag_id="d", run_id="r1") == epoch
    with pytest.raises(OpenEpochConflict) as info:
        ledger.reserve_stream_epoch(spec, source, dag_id="d", run_id="r2")
    assert str(info.value) == (
        f"pipeline {spec.name!r} already has open epoch {epoch.epoch_id} (RESERVED) "
        "owned by dag_id='d' run_id='r1'"
    )


def test_retention_gap_fails_by_default(ledger: Ledger) -> None:
    spec = make_spec(topics=["t"])
    source = FakeOffsetSource({"t": 1})
    source.produce("t", 0, 5)
    run_epoch(ledger, spec, source, "r1")
    source.produce("t", 0, 5)
    source.set_low("t", 0, 8)
    with pytest.raises(DataLossError) as info:
        ledger.reserve_stream_epoch(spec, source, dag_id="d", run_id="r2")
    assert str(info.value) == (
        "data loss on t[0]: next offset is 5 but the low watermark is 8; offsets [5, 8) (3 records) were "
        "deleted before they were read. Set on_data_loss: record_gap to skip them with a recorded gap."
    )
    assert (info.value.topic, info.value.partition, info.value.expected_start, info.value.low_watermark) == (
        "t", 0, 5, 8,
    )  # fmt: skip
    assert ledger.open_epochs(spec.name) == []
    assert ledger.gaps(spec.name) == []
    assert ledger.cursors(spec.name) == {("t", 0): 5}


def test_retention_gap_recorded_when_the_pipeline_says_so(ledger: Ledger) -> None:
    spec = make_spec(topics=["t"], on_data_loss="record_gap")
    source = FakeOffsetSource({"t": 2})
    source.produce("t", 0, 5)
    source.produce("t", 1, 1)
    run_epoch(ledger, spec, source, "r1")
    source.produce("t", 0, 5)
    source.set_low("t", 0, 8)
    epoch = run_epoch(ledger, spec, source, "r2")
    assert epoch is not None
    assert ranges_of(epoch) == [("t", 0, 8, 10), ("t", 1, 1, 1)]
    assert ledger.gaps(spec.name) == [
        {
            "topic": "t",
            "partition": 0,
            "start": 5,
            "end": 8,
            "epoch_id": epoch.epoch_id,
            "reason": "retention",
        }
    ]
    assert ledger.cursors(spec.name) == {("t", 0): 10, ("t", 1): 1}


def test_cursor_beyond_high_watermark_is_a_clear_error(ledger: Ledger) -> None:
    spec = make_spec(topics=["t"])
    source = FakeOffsetSource({"t": 1})
    source.produce("t", 0, 5)
    run_epoch(ledger, spec, source, "r1")
    source.partitions[("t", 0)] = [0, 2]  # deleted and recreated with 2 records
    with pytest.raises(CursorBeyondHighWatermark) as info:
        ledger.reserve_stream_epoch(spec, source, dag_id="d", run_id="r2")
    assert str(info.value) == (
        "cursor of t[0] is 5 but its high watermark is 2: the topic was probably deleted and recreated; "
        "the ledger will not guess where to resume"
    )
    assert ledger.open_epochs(spec.name) == []


def test_caps_split_proportionally_with_exact_numbers(ledger: Ledger) -> None:
    spec = make_spec(topics=["t"], per_partition=50, total=30)
    source = FakeOffsetSource({"t": 4})
    for partition, count in enumerate([100, 10, 1, 0]):
        source.produce("t", partition, count)
    epoch = run_epoch(ledger, spec, source, "r1")
    # sizes after the per-partition cap: 50, 10, 1, 0 -> 1 each + 27 shared by (49, 9, 0)
    assert ranges_of(epoch) == [("t", 0, 0, 24), ("t", 1, 0, 5), ("t", 2, 0, 1), ("t", 3, 0, 0)]
    # left: 76, 5 -> capped 50, 5 -> 1 each + 28 shared by (49, 4): 25 r47 and 2 r6, +1 to the first
    assert ranges_of(run_epoch(ledger, spec, source, "r2")) == [
        ("t", 0, 24, 51), ("t", 1, 5, 8), ("t", 2, 1, 1), ("t", 3, 0, 0),
    ]  # fmt: skip


def test_no_matching_partitions_opens_nothing(ledger: Ledger) -> None:
    spec = make_spec(pattern=r"nothing-.*")
    assert ledger.reserve_stream_epoch(spec, FakeOffsetSource({"t": 1}), dag_id="d", run_id="r") is None
    assert ledger.list_epochs(pipeline=spec.name) == []


def test_200_epochs_with_growing_partitions_stay_contiguous(ledger: Ledger) -> None:
    spec = make_spec(pattern=r"grow-.*", per_partition=4, total=9)
    source = FakeOffsetSource({"grow-a": 2})
    rng = random.Random(42)
    committed = 0
    for i in range(400):
        if committed >= 200:
            break
        if i == 50:
            source.add_partitions("grow-b", 3)
        if i == 100:
            source.add_partitions("grow-a", 4)  # partition-count growth at the hook boundary
        if i == 150:
            source.add_partitions("grow-c", 1)
        for tp in source.partitions:
            source.produce(*tp, rng.choice([0, 0, 1, 3]))
        if i % 13 == 7:
            doomed = ledger.reserve_stream_epoch(spec, source, dag_id="d", run_id=f"doomed-{i}")
            if doomed is not None:
                ledger.abort(doomed.epoch_id, "simulated failure")
        committed += run_epoch(ledger, spec, source, f"run-{i}") is not None
    while run_epoch(ledger, spec, source, f"drain-{committed}") is not None:
        committed += 1
    assert committed >= 200
    assert ("grow-c", 0) in source.partitions
    cursors = ledger.cursors(spec.name)
    assert cursors == {tp: high for tp, (_, high) in source.watermarks(source.partitions).items()}
    epochs = ledger.list_epochs(pipeline=spec.name, state=EpochState.COMMITTED, kind=EpochKind.STREAM)
    assert len(epochs) == committed
    assert_contiguous(epochs, cursors)
    assert source.groups[spec.group_id] == cursors
