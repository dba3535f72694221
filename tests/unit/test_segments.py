"""The segment builder: exact segments, and visible state under any replay order."""

from __future__ import annotations

import random

import pytest

from airflow_provider_eo.spark.hbase_sink.segments import Segment, SegmentBuilder, build_segments
from airflow_provider_eo.spark.records import RowDelete, RowMutation, RowPut
from tests.unit.cell_version_model import (
    FAMILY,
    HBaseVersionModel,
    expected_state,
    random_history,
    random_split,
)

A, B = b"cf:a", b"cf:b"


def put(row: bytes, **cells: str) -> RowPut:
    return RowPut(row, {FAMILY + b":" + k.encode(): v.encode() for k, v in cells.items()})


def delete(row: bytes) -> RowDelete:
    return RowDelete(row, (FAMILY,))


def shape(segments: list[Segment]) -> list[tuple[int, int, int, dict, dict]]:
    return [(s.first_offset, s.last_offset, s.record_count, s.puts, s.deletes) for s in segments]


def test_segments_are_contiguous_batches_stamped_with_last_offset() -> None:
    items = [(10, put(b"r1", a="1")), (11, put(b"r2", a="2")), (13, put(b"r1", a="3")), (14, None)]
    segments = list(build_segments(items, batch_size=2))
    assert shape(segments) == [
        (10, 11, 2, {b"r1": {A: b"1"}, b"r2": {A: b"2"}}, {}),
        (13, 14, 2, {b"r1": {A: b"3"}}, {}),
    ]
    assert [s.timestamp for s in segments] == [11, 14]
    assert [s.cell_count for s in segments] == [2, 1]


def test_later_value_of_a_cell_wins_within_a_segment() -> None:
    items = [(0, put(b"r", a="old", b="x")), (1, put(b"r", a="new"))]
    assert shape(list(build_segments(items, 10))) == [(0, 1, 2, {b"r": {A: b"new", B: b"x"}}, {})]


def test_tombstone_drops_pending_puts_and_becomes_family_delete() -> None:
    items = [(0, put(b"r", a="1")), (1, put(b"s", a="2")), (2, delete(b"r")), (3, delete(b"r"))]
    assert shape(list(build_segments(items, 10))) == [(0, 3, 4, {b"s": {A: b"2"}}, {b"r": (FAMILY,)})]


def test_put_after_pending_delete_flushes_the_segment_first() -> None:
    items = [(0, put(b"r", a="1")), (1, delete(b"r")), (2, put(b"s", a="x")), (3, put(b"r", b="2"))]
    segments = list(build_segments(items, 10))
    assert shape(segments) == [
        (0, 2, 3, {b"s": {A: b"x"}}, {b"r": (FAMILY,)}),
        (3, 3, 1, {b"r": {B: b"2"}}, {}),
    ]


def test_flush_then_batch_full_can_complete_two_segments_at_once() -> None:
    builder = SegmentBuilder(batch_size=1)
    assert shape(builder.add(0, delete(b"r"))) == [(0, 0, 1, {}, {b"r": (FAMILY,)})]
    builder = SegmentBuilder(batch_size=2)
    assert builder.add(0, delete(b"r")) == []
    done = builder.add(1, put(b"r", a="1"))
    assert shape(done) == [(0, 0, 1, {}, {b"r": (FAMILY,)})]
    assert shape([builder.finish()]) == [(1, 1, 1, {b"r": {A: b"1"}}, {})]  # type: ignore[list-item]


def test_records_without_mutation_count_and_empty_puts_do_not_flush() -> None:
    items = [(5, delete(b"r")), (6, None), (7, RowPut(b"r", {})), (8, None)]
    segments = list(build_segments(items, 3))
    assert shape(segments) == [(5, 7, 3, {}, {b"r": (FAMILY,)}), (8, 8, 1, {}, {})]
    assert segments[1].is_empty()


def test_byte_bound_closes_a_segment_before_the_record_that_would_overflow_it() -> None:
    # each put weighs row (2) + column (4) + value (4) = 10 bytes
    items = [(i, put(f"r{i % 3}".encode(), a=f"{i:04d}")) for i in range(7)]
    segments = list(build_segments(items, batch_size=100, batch_bytes=25))
    assert [(s.first_offset, s.last_offset, s.payload_bytes) for s in segments] == [
        (0, 1, 20),
        (2, 3, 20),
        (4, 5, 20),
        (6, 6, 10),
    ]
    exact = list(build_segments(items, batch_size=100, batch_bytes=20))  # full at exactly the bound
    assert [(s.first_offset, s.last_offset) for s in exact] == [(0, 1), (2, 3), (4, 5), (6, 6)]


def test_a_record_heavier_than_the_byte_bound_goes_alone() -> None:
    big = put(b"big", a="x" * 100)  # 3 + 4 + 100 = 107 bytes
    items = [(0, put(b"r", a="1")), (1, put(b"s", a="2")), (2, big), (3, put(b"r", a="3")), (4, None)]
    segments = list(build_segments(items, batch_size=100, batch_bytes=50))
    assert shape(segments) == [
        (0, 1, 2, {b"r": {A: b"1"}, b"s": {A: b"2"}}, {}),
        (2, 2, 1, {b"big": {A: b"x" * 100}}, {}),
        (3, 4, 2, {b"r": {A: b"3"}}, {}),
    ]
    assert [s.timestamp for s in segments] == [1, 2, 4]


def test_records_without_mutation_weigh_nothing_and_tombstones_weigh_row_and_family() -> None:
    items: list[tuple[int, RowMutation | None]] = [
        (0, put(b"r", a="1")),
        (1, None),
        (2, None),
        (3, delete(b"rr")),
    ]
    assert delete(b"rr").size_bytes == 4
    segments = list(build_segments(items, batch_size=100, batch_bytes=9))
    assert [(s.first_offset, s.last_offset, s.payload_bytes) for s in segments] == [(0, 2, 6), (3, 3, 4)]
    with pytest.raises(ValueError, match="batch_bytes must be >= 1"):
        SegmentBuilder(10, 0)


def test_offsets_must_increase_and_batch_size_positive() -> None:
    with pytest.raises(ValueError, match="offsets must increase: 3 after 3"):
        list(build_segments([(3, None), (3, None)], 5))
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        SegmentBuilder(0)


def test_empty_input_gives_no_segment() -> None:
    assert list(build_segments([], 5)) == []


def test_old_range_replayed_after_newer_data_never_moves_cells_back() -> None:
    items: list[tuple[int, RowMutation | None]] = [
        (0, put(b"r", a="v0")),
        (1, delete(b"r")),
        (2, put(b"r", a="v2", b="b2")),
        (3, put(b"r", a="v3")),
    ]
    model = HBaseVersionModel()
    for segment in build_segments(items, 10):
        model.apply(segment)
    for segment in build_segments(items[:2], 1):  # replay the old range, other segmentation
        model.apply(segment)
    for segment in build_segments(items[:1], 1):
        model.apply(segment)
    assert model.visible() == {b"r": {A: b"v3", B: b"b2"}} == expected_state(items)


@pytest.mark.parametrize("seed", range(400))
def test_property_any_splits_sizes_and_replay_orders_give_last_record_wins(seed: int) -> None:
    rng = random.Random(seed)
    history = random_history(rng, rng.randrange(1, 40), keys=rng.randrange(1, 4))
    model = HBaseVersionModel()
    writes: list[list[Segment]] = []
    for _run in range(rng.randrange(1, 4)):  # several runs, each with its own split and batch sizes
        for i, j in random_split(rng, len(history)):
            batch_bytes = rng.choice((None, 1, 8, 20, 40))  # byte bounds of 0 to several records
            writes.append(list(build_segments(history[i:j], rng.randrange(1, 6), batch_bytes)))
    rng.shuffle(writes)  # any replay order, old ranges after new ones included
    if rng.random() < 0.5:
        writes += writes[: rng.randrange(len(writes) + 1)]  # and repeated re-runs
    for segments in writes:
        for segment in segments:
            model.apply(segment)
    assert model.visible() == expected_state(history), f"seed={seed} history={history}"


def test_model_detects_a_wall_clock_style_versioning_bug() -> None:
    """Sanity check of the oracle: stamping an old replay with a later version must fail."""
    items: list[tuple[int, RowMutation | None]] = [(0, put(b"r", a="old")), (1, put(b"r", a="new"))]
    model = HBaseVersionModel()
    for segment in build_segments(items, 10):
        model.apply(segment)
    stale = next(iter(build_segments(items[:1], 10)))
    stale.last_offset = 99  # what a wall-clock timestamp would do
    model.apply(stale)
    assert model.visible() != expected_state(items)


def test_a_skipped_record_closes_the_segment_before_it() -> None:
    """A dead letter (or a record outside a replay's selection) at 11: the record before it
    is stamped 10, so a later replay of 11 alone (stamped 11) outranks it."""
    builder = SegmentBuilder(batch_size=10)
    assert builder.add(10, put(b"r", a="old")) == []
    closed = builder.skip(11)
    assert (shape(closed), [s.timestamp for s in closed]) == ([(10, 10, 1, {b"r": {A: b"old"}}, {})], [10])
    assert builder.skip(12) == []  # nothing open: nothing to close
    assert builder.add(13, put(b"s", a="x")) == []
    last = builder.finish()
    assert last is not None and (last.first_offset, last.timestamp) == (13, 13)
    with pytest.raises(ValueError, match="offsets must increase: 13 after 13"):
        builder.skip(13)
