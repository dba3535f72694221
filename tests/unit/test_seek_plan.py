"""``ledger/planning/seek_plan.py``: targets, partitions and watermarks -> cursor moves, gaps, refusals."""

from __future__ import annotations

import pytest

from airflow_provider_eo.ledger.model.epoch import PartitionRange
from airflow_provider_eo.ledger.model.refusals import SeekRefused
from airflow_provider_eo.ledger.planning.seek_plan import (
    CursorMove,
    SeekPlan,
    SeekTarget,
    group_targets,
    parse_partition,
    parse_target,
    plan_moves,
    select_partitions,
    target_offsets,
)

A0, A1 = ("a", 0), ("a", 1)
WATERMARKS = {A0: (2, 10), A1: (0, 0)}


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("earliest", SeekTarget("earliest")),
        ("latest", SeekTarget("latest")),
        ("offset:0", SeekTarget("offset", 0)),
        ("offset:42", SeekTarget("offset", 42)),
        ("timestamp:1700000000000", SeekTarget("timestamp", 1_700_000_000_000)),
        ("timestamp:2023-11-14T22:13:20Z", SeekTarget("timestamp", 1_700_000_000_000)),
        ("timestamp:2023-11-14T22:13:20", SeekTarget("timestamp", 1_700_000_000_000)),  # UTC
        ("timestamp:2023-11-14T23:13:20.5+01:00", SeekTarget("timestamp", 1_700_000_000_500)),
    ],
)
def test_targets(text: str, target: SeekTarget) -> None:
    assert parse_target(text) == target


@pytest.mark.parametrize(
    "text", ["", "first", "offset:", "offset:-1", "offset:1.5", "latest:3", "timestamp:"]
)
def test_bad_targets_are_refused(text: str) -> None:
    with pytest.raises(SeekRefused, match="--to takes earliest, latest, offset:N"):
        parse_target(text)


def test_partitions() -> None:
    assert parse_partition("orders.v1:3") == ("orders.v1", 3)
    for bad in ("orders", ":1", "orders:x"):
        with pytest.raises(SeekRefused, match="expected TOPIC:PARTITION"):
            parse_partition(bad)
    assert select_partitions("p", [A1, A0], []) == [A0, A1]
    assert select_partitions("p", [A1, A0], [A1, A1]) == [A1]
    with pytest.raises(SeekRefused, match=r"no pinned partition a:7 \(pinned: a:0, a:1\)"):
        select_partitions("p", [A0, A1], [("a", 7)])
    with pytest.raises(SeekRefused, match="has no pinned partition yet"):
        select_partitions("p", [], [])


def test_target_offsets_and_watermark_refusals() -> None:
    tps = [A0, A1]
    assert target_offsets(SeekTarget("earliest"), tps, WATERMARKS) == {A0: 2, A1: 0}
    assert target_offsets(SeekTarget("latest"), tps, WATERMARKS) == {A0: 10, A1: 0}
    assert target_offsets(SeekTarget("offset", 10), [A0], WATERMARKS) == {A0: 10}
    with pytest.raises(
        SeekRefused, match=r"offset 1 is below the low watermark of a\[0\]: low watermark 2, high"
    ):
        target_offsets(SeekTarget("offset", 1), tps, WATERMARKS)
    with pytest.raises(SeekRefused, match=r"offset 11 is above the high watermark of a\[0\]"):
        target_offsets(SeekTarget("offset", 11), tps, WATERMARKS)
    ts = SeekTarget("timestamp", 5)
    assert target_offsets(ts, tps, WATERMARKS, {A0: 7, A1: 0}) == {A0: 7, A1: 0}  # A1 empty: its end
    with pytest.raises(SeekRefused, match=r"timestamp 5 is after every record of a\[0\] \(offsets 2..9\)"):
        target_offsets(ts, tps, WATERMARKS, {A0: 10, A1: 0})


def test_plans_gap_forward_moves_only() -> None:
    plan = plan_moves("p", "seek", {A0: 5, A1: 0}, {A0: 8, A1: 0})
    assert plan == SeekPlan(
        "p", "seek", (CursorMove("a", 0, 5, 8), CursorMove("a", 1, 0, 0)), (PartitionRange("a", 0, 5, 8),)
    )
    assert plan.changes == (CursorMove("a", 0, 5, 8),)
    back = plan_moves("p", "seek", {A0: 5}, {A0: 3})
    assert (back.gaps, back.moves[0].to_json()["direction"]) == ((), "backward")


def test_group_targets() -> None:
    assert group_targets({A0: 4, A1: None}, WATERMARKS) == ({A0: 4}, [A1])
    with pytest.raises(SeekRefused, match=r"the group's offset 12 is above the high watermark of a\[0\]"):
        group_targets({A0: 12}, WATERMARKS)
