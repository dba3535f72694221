"""Backfill planning from plain values (no Kafka): the chosen partitions, the timestamps to
look up, the ranges a window or an interval means, the pipeline's topics; and the typed
requests' own checks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_eo.ledger.model.epoch import PartitionRange as R
from airflow_provider_eo.ledger.planning.backfill_plan import (
    check_pipeline_topics,
    chosen_partitions,
    epoch_ms,
    timestamps_of,
    window_ranges,
)
from airflow_provider_eo.ledger.planning.backfill_request import DataInterval, OffsetWindow, PartitionChoice

LISTED = [("t", 0), ("t", 1), ("u", 0)]
T0 = datetime(2026, 3, 1, tzinfo=UTC)
MS0 = epoch_ms(T0)


def test_chosen_partitions_keep_the_listed_order_and_name_a_missing_one() -> None:
    assert chosen_partitions(PartitionChoice(), LISTED) == LISTED
    assert chosen_partitions(PartitionChoice(partitions=(0,)), LISTED) == [("t", 0), ("u", 0)]
    with pytest.raises(ValueError) as info:
        chosen_partitions(PartitionChoice(partitions=(1,)), LISTED)
    assert str(info.value) == "backfill param 'partitions': u has no partition(s) [1]"
    with pytest.raises(ValueError) as info:
        chosen_partitions(PartitionChoice(topics=("t",), partitions=(1, 7)), [("t", 0), ("t", 1)])
    assert str(info.value) == "backfill param 'partitions': t has no partition(s) [7]"


def test_the_timestamps_to_look_up() -> None:
    second = T0 + timedelta(seconds=1)
    assert timestamps_of(OffsetWindow(start_offset=0)) == ()
    assert timestamps_of(OffsetWindow(start_offset=0, until=T0)) == (MS0,)
    assert timestamps_of(OffsetWindow(start_time=T0, end_offset=9, until=second)) == (MS0,)
    assert timestamps_of(OffsetWindow(start_time=T0, end_time=second, until=T0)) == (MS0, MS0 + 1000)
    assert timestamps_of(DataInterval(T0, second)) == (MS0, MS0 + 1000)


def test_a_window_becomes_ranges_from_the_values_given() -> None:
    tps = [("t", 0), ("t", 1)]
    marks = {("t", 0): (0, 8), ("t", 1): (2, 4)}
    # no end, no until: each partition's high watermark; an empty range is left out
    assert window_ranges(OffsetWindow(start_offset=3), [("t", 0)], {}, marks) == [R("t", 0, 3, 8)]
    at = {MS0: {("t", 0): 2, ("t", 1): 3}, MS0 + 5000: {("t", 0): 6, ("t", 1): 3}}
    both = OffsetWindow(start_time=T0, end_time=T0 + timedelta(seconds=5))
    assert window_ranges(both, tps, at, {}) == [R("t", 0, 2, 6)]
    until = OffsetWindow(start_offset=1, until=T0 + timedelta(seconds=5))
    assert window_ranges(until, tps, at, {}) == [R("t", 0, 1, 6), R("t", 1, 1, 3)]
    with pytest.raises(ValueError) as info:
        window_ranges(OffsetWindow(start_offset=5, end_offset=3), tps, {}, {})
    assert str(info.value) == "backfill of t[0]: start 5 is after the end 3 (end_offset)"
    with pytest.raises(ValueError) as info:
        window_ranges(OffsetWindow(start_offset=5), [("t", 1)], {}, marks)
    assert str(info.value) == "backfill of t[1]: start 5 is after the end 4 (high watermark)"


def test_an_interval_is_the_offsets_between_its_two_lookups() -> None:
    end = T0 + timedelta(seconds=40)
    at = {MS0: {("t", 0): 1, ("t", 1): 4}, epoch_ms(end): {("t", 0): 4, ("t", 1): 4}}
    assert window_ranges(DataInterval(T0, end), [("t", 0), ("t", 1)], at, {}) == [R("t", 0, 1, 4)]


def test_the_typed_requests_check_themselves() -> None:
    with pytest.raises(ValueError, match="give exactly one of 'start_offset' and 'start_time'"):
        OffsetWindow()
    with pytest.raises(ValueError, match="give exactly one of 'start_offset' and 'start_time'"):
        OffsetWindow(start_offset=0, start_time=T0)
    with pytest.raises(ValueError, match="give at most one of 'end_offset' and 'end_time'"):
        OffsetWindow(start_offset=0, end_offset=3, end_time=T0)
    with pytest.raises(ValueError) as info:
        DataInterval(T0, T0 - timedelta(seconds=1))
    assert str(info.value) == (
        "backfill data interval ends (2026-02-28T23:59:59+00:00) before it starts (2026-03-01T00:00:00+00:00)"
    )


def test_ranges_of_other_topics_are_refused_unless_the_pattern_matches() -> None:
    check_pipeline_topics("p", ("t",), None, [R("t", 0, 0, 1)])
    check_pipeline_topics("p", (), "orders\\..*", [R("orders.eu", 0, 0, 1)])
    with pytest.raises(ValueError) as info:
        check_pipeline_topics("p", ("t",), None, [R("t", 0, 0, 1), R("x", 0, 0, 1), R("a", 0, 0, 1)])
    assert str(info.value) == "pipeline 'p': backfill topic(s) ['a', 'x'] are not topics of the pipeline"
