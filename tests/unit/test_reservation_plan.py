"""Pure reservation planning: cap split, starting pins, cursor checks (no services)."""

from __future__ import annotations

import pytest

from airflow_provider_eo.config import CapsSpec, StartingSpec
from airflow_provider_eo.ledger import CursorBeyondHighWatermark, DataLossError, PartitionRange
from airflow_provider_eo.ledger.stream_plan import Pin, choose_pins, plan_stream, split_cap

TP = tuple[str, int]
A0, A1, A2, A3 = ("a", 0), ("a", 1), ("a", 2), ("a", 3)


@pytest.mark.parametrize(
    ("available", "caps", "expected"),
    [
        ({A0: 10, A1: 5}, CapsSpec(), {A0: 10, A1: 5}),
        ({A0: 10, A1: 5}, CapsSpec(4, None), {A0: 4, A1: 4}),
        ({A0: 10, A1: 5}, CapsSpec(None, 15), {A0: 10, A1: 5}),
        # 1 each, then 10 shared by (9, 4, 0): 6 r12 / 3 r1 / 0 -> leftover 1 to a0
        ({A0: 10, A1: 5, A2: 1, A3: 0}, CapsSpec(None, 13), {A0: 8, A1: 4, A2: 1, A3: 0}),
        ({A0: 100, A1: 10, A2: 1, A3: 0}, CapsSpec(50, 30), {A0: 24, A1: 5, A2: 1, A3: 0}),
        # total below the number of partitions with data: the fullest get one each
        ({A0: 3, A1: 9, A2: 9, A3: 1}, CapsSpec(None, 2), {A0: 0, A1: 1, A2: 1, A3: 0}),
        ({A0: 1000, A1: 1}, CapsSpec(None, 2), {A0: 1, A1: 1}),
        ({A0: 7, A1: 7, A2: 7}, CapsSpec(None, 10), {A0: 4, A1: 3, A2: 3}),
    ],
)
def test_split_cap_exact(available: dict[TP, int], caps: CapsSpec, expected: dict[TP, int]) -> None:
    result = split_cap(available, caps)
    assert result == expected
    per = caps.max_records_per_partition
    capped = sum(min(n, per) if per is not None else n for n in available.values())
    assert sum(result.values()) == min(caps.max_records_total or capped, capped)


def test_split_cap_is_deterministic_and_never_exceeds_availability() -> None:
    available = {("t", p): (p * 37) % 11 for p in range(40)}
    for total in range(1, 200, 7):
        first = split_cap(available, CapsSpec(None, total))
        assert first == split_cap(dict(reversed(list(available.items()))), CapsSpec(None, total))
        assert all(0 <= first[tp] <= available[tp] for tp in available)
        with_data = [tp for tp, n in available.items() if n > 0]
        if total >= len(with_data):
            assert all(first[tp] >= 1 for tp in with_data)


def test_pins_first_reservation_prefers_group_offsets() -> None:
    marks = {A0: (2, 10), A1: (0, 7)}
    latest = StartingSpec("latest")
    group = {A0: 4, A1: None}
    pins = choose_pins(
        [A0, A1], marks, first_reservation=True, starting=latest, group_offsets=group, timestamp_offsets={}
    )
    assert pins == {A0: Pin(4, "group"), A1: Pin(7, "latest")}


def test_pins_later_partitions_use_new_partition_policy() -> None:
    marks = {A0: (2, 10)}
    earliest = StartingSpec("latest", None, "earliest")
    assert choose_pins([A0], marks, first_reservation=False, starting=earliest, group_offsets={A0: 9},
                       timestamp_offsets={}) == {A0: Pin(2, "earliest")}  # fmt: skip
    timestamp = StartingSpec("timestamp", 5000)
    assert choose_pins([A0], marks, first_reservation=True, starting=timestamp, group_offsets={},
                       timestamp_offsets={A0: -1}) == {A0: Pin(10, "timestamp")}  # fmt: skip


def test_plan_stream_checks_and_gaps() -> None:
    marks = {A0: (5, 9), A1: (0, 3)}
    with pytest.raises(DataLossError):
        plan_stream({A0: 2, A1: 0}, marks, CapsSpec(), record_gaps=False)
    plan = plan_stream({A0: 2, A1: 0}, marks, CapsSpec(), record_gaps=True)
    assert plan.ranges == (PartitionRange("a", 0, 5, 9), PartitionRange("a", 1, 0, 3))
    assert plan.gaps == (PartitionRange("a", 0, 2, 5),)
    with pytest.raises(CursorBeyondHighWatermark):
        plan_stream({A0: 10, A1: 0}, marks, CapsSpec(), record_gaps=True)
    assert not plan_stream({A0: 9, A1: 3}, marks, CapsSpec(), record_gaps=False).has_data
