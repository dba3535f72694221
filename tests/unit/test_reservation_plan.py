"""Pure reservation planning: cap split, starting pins, cursor checks (no services)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from airflow_provider_eo.config import CapsSpec, StartingSpec
from airflow_provider_eo.ledger import CursorBeyondHighWatermark, DataLossError, PartitionRange
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.refusals import InvalidRanges, OpenEpochConflict
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.ledger.planning.backfill_plan import run_epoch_or_none
from airflow_provider_eo.ledger.planning.stream_plan import (
    Pin,
    choose_pins,
    plan_stream,
    resume_or_conflict,
    split_cap,
    starting_policy,
    timestamp_to_look_up,
)

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


def test_a_timestamp_is_looked_up_only_for_a_timestamp_policy() -> None:
    at_first = StartingSpec("timestamp", 5000, "earliest")
    assert timestamp_to_look_up(at_first, first_reservation=True) == 5000
    assert timestamp_to_look_up(at_first, first_reservation=False) is None
    assert timestamp_to_look_up(StartingSpec("latest"), first_reservation=True) is None
    assert timestamp_to_look_up(StartingSpec("earliest"), first_reservation=True) is None


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


def _epoch(epoch_id: int, state: str, run_id: str, *ranges: PartitionRange) -> Epoch:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    return Epoch(
        epoch_id, "p", EpochKind.BACKFILL, EpochState(state), "tok", "d", run_id, created, ranges=ranges
    )


def test_a_runs_own_open_stream_epoch_is_resumed_and_another_runs_is_a_conflict() -> None:
    mine = _epoch(4, "RESERVED", "r1")
    assert resume_or_conflict("p", [mine], RunIdentity("d", "r1")) is mine
    assert resume_or_conflict("p", [], RunIdentity("d", "r1")) is None
    with pytest.raises(OpenEpochConflict) as info:
        resume_or_conflict("p", [mine], RunIdentity("d", "r2"))
    assert (info.value.epoch_id, info.value.run_id) == (4, "r1")


def test_the_starting_policy_is_the_first_reservations_then_the_new_partitions() -> None:
    starting = StartingSpec("latest", None, "earliest")
    assert starting_policy(starting, first_reservation=True) == "latest"
    assert starting_policy(starting, first_reservation=False) == "earliest"


def test_a_runs_backfill_request_resumes_conflicts_or_inserts() -> None:
    a, b = PartitionRange("t", 0, 0, 10), PartitionRange("t", 0, 10, 20)
    done, open_ = _epoch(1, "COMMITTED", "r", a), _epoch(2, "WRITTEN", "r", b)
    assert run_epoch_or_none("p", [done, open_], (a,), None) is done  # a resumed run
    assert run_epoch_or_none("p", [done, open_], (b,), None) is open_  # a retried chunk
    with pytest.raises(OpenEpochConflict):
        run_epoch_or_none("p", [open_], (PartitionRange("t", 0, 15, 25),), None)
    assert (
        run_epoch_or_none("p", [done], (PartitionRange("t", 0, 5, 15),), None) is None
    )  # settled: no conflict
    with pytest.raises(InvalidRanges, match=r"outside the available offsets \[0, 12\)"):
        run_epoch_or_none("p", [open_], (PartitionRange("t", 1, 0, 13),), {("t", 1): (0, 12)})
