"""Field versions in the segment builder: exact segments and calls, collapsing, ties, the
contract's errors, and visible state under any split and replay order."""

from __future__ import annotations

import random

import pytest

from airflow_provider_eo.spark.hbase_sink.segments import (
    MAX_CELL_VERSION,
    Segment,
    SegmentBuilder,
    WriteCall,
    build_segments,
)
from airflow_provider_eo.spark.records import RowDelete, RowMutation, RowPut
from tests.unit.cell_version_model import (
    FAMILY,
    HBaseVersionModel,
    expected_field_state,
    random_field_history,
    random_split,
)

A, B = b"cf:a", b"cf:b"
Items = list[tuple[int, RowMutation | None]]


def put(row: bytes, version: int | None, **cells: str) -> RowPut:
    return RowPut(row, {FAMILY + b":" + k.encode(): v.encode() for k, v in cells.items()}, version)


def test_highest_version_wins_per_cell_and_a_tie_goes_to_the_later_offset() -> None:
    items: Items = [
        (0, put(b"r", 5, a="x")),
        (1, put(b"r", 3, a="older", b="b3")),  # a: 3 < 5 loses; b: first value
        (2, put(b"s", 4, a="q")),
        (3, put(b"r", 5, a="tie")),  # equal version, later offset: wins
        (4, None),
    ]
    [segment] = build_segments(items, 10)
    assert (segment.first_offset, segment.last_offset, segment.record_count) == (0, 4, 5)
    assert segment.puts == {} and segment.deletes == {}
    assert segment.versioned_puts == {b"r": {A: (5, b"tie"), B: (3, b"b3")}, b"s": {A: (4, b"q")}}
    assert segment.cell_count == 3
    assert segment.calls() == [
        WriteCall(3, {}, {b"r": {B: b"b3"}}),
        WriteCall(4, {}, {b"s": {A: b"q"}}),
        WriteCall(5, {}, {b"r": {A: b"tie"}}),
    ]


def test_one_call_per_distinct_version_rows_in_first_seen_order() -> None:
    items: Items = [(0, put(b"z", 7, a="1")), (1, put(b"y", 2, a="2")), (2, put(b"x", 7, b="3", a="4"))]
    [segment] = build_segments(items, 10)
    assert segment.calls() == [
        WriteCall(2, {}, {b"y": {A: b"2"}}),
        WriteCall(7, {}, {b"z": {A: b"1"}, b"x": {B: b"3", A: b"4"}}),
    ]
    assert [list(call.puts) for call in segment.calls()] == [[b"y"], [b"z", b"x"]]


def test_offset_versioned_segment_is_one_call_at_its_last_offset() -> None:
    items: Items = [(3, put(b"r", None, a="1")), (4, RowDelete(b"s", (FAMILY,))), (6, None)]
    [segment] = build_segments(items, 10)
    assert segment.calls() == [WriteCall(6, {b"s": (FAMILY,)}, {b"r": {A: b"1"}})]
    assert Segment(0, 0).calls() == []


def test_bounds_are_the_same_with_and_without_versions() -> None:
    rng = random.Random(7)
    history = random_field_history(rng, 60)
    plain: Items = [(o, None if m is None else RowPut(m.row, m.cells)) for o, m in history]

    def shape(items: Items, batch_size: int, batch_bytes: int | None) -> list[tuple[int, ...]]:
        return [
            (s.first_offset, s.last_offset, s.record_count, s.payload_bytes, s.cell_count)
            for s in build_segments(items, batch_size, batch_bytes)
        ]

    for bounds in ((1, None), (4, None), (100, 30), (7, 50), (100, 1)):
        assert shape(history, *bounds) == shape(plain, *bounds), bounds


def test_byte_bound_closes_field_versioned_segments_exactly_as_before() -> None:
    # each put weighs row (2) + column (4) + value (4) = 10 bytes; versions descend
    items: Items = [(i, put(f"r{i % 3}".encode(), 100 - i, a=f"{i:04d}")) for i in range(5)]
    segments = list(build_segments(items, batch_size=100, batch_bytes=25))
    assert [(s.first_offset, s.last_offset, s.payload_bytes) for s in segments] == [
        (0, 1, 20),
        (2, 3, 20),
        (4, 4, 10),
    ]
    assert [s.calls() for s in segments] == [
        [WriteCall(99, {}, {b"r1": {A: b"0001"}}), WriteCall(100, {}, {b"r0": {A: b"0000"}})],
        [WriteCall(97, {}, {b"r0": {A: b"0003"}}), WriteCall(98, {}, {b"r2": {A: b"0002"}})],
        [WriteCall(96, {}, {b"r1": {A: b"0004"}})],
    ]


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([(1, RowDelete(b"r", (FAMILY,))), (2, RowDelete(b"r", (FAMILY,), 9))],
         "offset 2: a delete with a field version after mutations with offset versions in the same range: "
         "one pipeline's versions come from one source"),
        ([(1, put(b"r", 9, a="1")), (2, RowDelete(b"r", (FAMILY,)))],
         "offset 2: a delete (tombstone) without a version after mutations with field versions in the same "
         "range: a family delete at an offset version cannot mask field-versioned cells"),
        ([(1, put(b"r", 9, a="1")), (2, put(b"r", None, a="2"))],
         "offset 2: a put with no version after mutations with field versions in the same range: "
         "one pipeline's versions come from one source"),
        ([(1, put(b"r", None, a="1")), (2, put(b"r", 9, a="2"))],
         "offset 2: a put with a field version after mutations with offset versions in the same range: "
         "one pipeline's versions come from one source"),
        ([(1, RowDelete(b"r", (FAMILY,))), (2, put(b"r", 9, a="2"))],
         "offset 2: a put with a field version after mutations with offset versions in the same range: "
         "one pipeline's versions come from one source"),
        ([(3, put(b"r", -1, a="1"))], f"offset 3: field version -1 is not an int in [0, {MAX_CELL_VERSION}]"),
        ([(3, put(b"r", 2**63 - 1, a="1"))],
         "offset 3: field version 9223372036854775807 is not an int in [0, 9223372036854775806]"),
        ([(3, put(b"r", True, a="1"))],
         f"offset 3: field version True is not an int in [0, {MAX_CELL_VERSION}]"),
    ],
)  # fmt: skip
def test_version_contract_errors_name_the_offset(items: Items, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        list(build_segments(items, 10))
    assert str(raised.value) == message


def test_versioned_deletes_go_in_the_call_of_their_version_before_its_puts() -> None:
    items: Items = [
        (0, put(b"r", 5, a="1")),
        (1, RowDelete(b"r", (FAMILY,), 7)),
        (2, RowDelete(b"r", (FAMILY,), 6)),  # lower than the pending delete: subsumed
        (3, put(b"r", 7, a="2")),  # replaces a=1 (higher version); the delete at 7 masks it in HBase
        (4, RowDelete(b"s", (FAMILY,), 3)),
    ]
    [segment] = build_segments(items, 10)
    assert segment.versioned_deletes == {b"r": {FAMILY: 7}, b"s": {FAMILY: 3}}
    assert segment.calls() == [
        WriteCall(3, {b"s": (FAMILY,)}, {}),
        WriteCall(7, {b"r": (FAMILY,)}, {b"r": {A: b"2"}}),
    ]


def test_puts_without_cells_and_no_ops_fix_no_version_source() -> None:
    items: Items = [(0, None), (1, RowPut(b"r", {})), (2, put(b"r", 8, a="1")), (3, RowPut(b"s", {}, None))]
    [segment] = build_segments(items, 10)
    assert segment.calls() == [WriteCall(8, {}, {b"r": {A: b"1"}})]
    builder = SegmentBuilder(10)
    builder.add(3, put(b"r", 1, a="x"))
    with pytest.raises(ValueError, match=r"^offset 4: a put with no version"):
        builder.add(4, put(b"r", None, a="x"))
    assert builder.last_offset == 3  # unchanged by the refused record


def test_newest_value_wins_whatever_the_arrival_order_split_or_replay() -> None:
    items: Items = [
        (0, put(b"r", 300, a="newest")),
        (1, put(b"r", 100, a="old")),
        (2, put(b"r", 200, a="mid")),
    ]
    for batch_size in (1, 2, 3):
        model = HBaseVersionModel()
        for segment in build_segments(items, batch_size):
            model.apply(segment)
        for segment in build_segments(items[1:], 1):  # a replay of the older part
            model.apply(segment)
        assert model.visible() == {b"r": {A: b"newest"}}


@pytest.mark.parametrize("seed", range(300))
def test_property_any_splits_sizes_and_replay_orders_give_highest_version_wins(seed: int) -> None:
    rng = random.Random(seed)
    history = random_field_history(rng, rng.randrange(1, 40), keys=rng.randrange(1, 4))
    model = HBaseVersionModel()
    writes: list[list[Segment]] = []
    for _run in range(rng.randrange(1, 4)):
        for i, j in random_split(rng, len(history)):
            batch_bytes = rng.choice((None, 1, 8, 20, 40))
            writes.append(list(build_segments(history[i:j], rng.randrange(1, 6), batch_bytes)))
    rng.shuffle(writes)  # ranges written in any order: as partitions of one epoch, or replays
    for segments in writes:
        for segment in segments:
            model.apply(segment)
    assert model.visible() == expected_field_state(history), f"seed={seed} history={history}"
