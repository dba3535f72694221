"""A pack's small segments in shared batches (``segment_batches.py``): bounds, merged calls,
owners, and the visible state of a batch equal to writing its segments one by one."""

from __future__ import annotations

import random

import pytest

from airflow_provider_eo.spark.hbase_sink.segment_batches import SegmentBatch, SegmentBatcher
from airflow_provider_eo.spark.hbase_sink.segments import Segment, WriteCall, build_segments
from airflow_provider_eo.spark.records import RowMutation, RowPut
from tests.unit.cell_version_model import (
    FAMILY,
    HBaseVersionModel,
    random_field_history,
    random_history,
    random_split,
)

A, B = b"cf:a", b"cf:b"


def seg(first: int, last: int, records: int, payload: int = 10, row: bytes = b"r") -> Segment:
    return Segment(first, last, records, payload, puts={row: {A: b"%d" % last}})


def owners_of(batches: list[SegmentBatch]) -> list[list[str]]:
    return [batch.owners for batch in batches]


def test_segments_share_a_batch_up_to_the_record_and_byte_bounds() -> None:
    batcher = SegmentBatcher(batch_size=10, batch_bytes=100)
    done = batcher.add(seg(0, 3, 4), "t/0") + batcher.add(seg(0, 3, 4), "t/1")
    assert done == []
    done = batcher.add(seg(0, 3, 4), "t/2")  # 12 records: closes the batch first
    assert owners_of(done) == [["t/0", "t/1"]]
    done = batcher.add(seg(0, 0, 1, payload=95), "t/3")  # 4 + 1 records, 10 + 95 bytes: too heavy
    assert owners_of(done) == [["t/2"]]
    last = batcher.finish()
    assert last is not None and last.owners == ["t/3"] and (last.record_count, last.payload_bytes) == (1, 95)
    assert batcher.finish() is None


def test_a_segment_at_a_bound_goes_alone_and_an_empty_segment_joins_no_batch() -> None:
    batcher = SegmentBatcher(batch_size=10, batch_bytes=100)
    assert batcher.add(seg(0, 0, 1), "t/0") == []
    done = batcher.add(seg(0, 9, 10), "t/1")  # full on its own: the pending batch first, then it
    assert owners_of(done) == [["t/0"], ["t/1"]]
    assert batcher.add(Segment(5, 7, 3), "t/2") == []  # nothing to send
    assert batcher.finish() is None
    assert owners_of(batcher.add(seg(0, 1, 2, payload=100), "t/3")) == [["t/3"]]  # at the byte bound


def test_calls_merge_equal_timestamps_in_segment_order_ascending() -> None:
    batch = SegmentBatch()
    batch.add(Segment(0, 9, 10, puts={b"x": {A: b"p0"}, b"y": {A: b"p0"}}), "t/0[0,10)")
    batch.add(Segment(0, 4, 5, puts={b"x": {A: b"p1", B: b"p1"}}, deletes={b"z": (FAMILY,)}), "t/1[0,5)")
    batch.add(Segment(0, 9, 10, puts={b"x": {A: b"p2"}}, deletes={b"y": (FAMILY,)}), "t/2[0,10)")
    batch.add(Segment(5, 9, 5, deletes={b"z": (FAMILY, b"other")}), "t/1[5,10)")
    assert batch.calls() == [
        WriteCall(4, {b"z": (FAMILY,)}, {b"x": {A: b"p1", B: b"p1"}}),
        WriteCall(9, {b"y": (FAMILY,), b"z": (FAMILY, b"other")}, {b"x": {A: b"p2"}, b"y": {A: b"p0"}}),
    ]
    assert batch.segments[0].puts == {b"x": {A: b"p0"}, b"y": {A: b"p0"}}  # the segments are not changed
    assert batch.owners_text() == "t/0[0,10), t/1[0,5), t/2[0,10), t/1[5,10)"


def test_owners_text_names_ten_ranges_then_counts_the_rest() -> None:
    batch = SegmentBatch()
    for p in range(13):
        batch.add(seg(0, 0, 1), f"t/{p}")
        batch.add(seg(1, 1, 1), f"t/{p}")  # two segments of one range: named once
    named = ", ".join(f"t/{p}" for p in range(10))
    assert batch.owners_text() == f"{named} and 3 more"


def own_values(mutation: RowMutation | None, partition: int) -> RowMutation | None:
    """``mutation`` with partition ``partition``'s own values (a merge that loses a write shows)."""
    if not isinstance(mutation, RowPut):
        return mutation
    cells = {column: value + b"@%d" % partition for column, value in mutation.cells.items()}
    return RowPut(mutation.row, cells, mutation.version)


def _pack_segments(
    rng: random.Random, histories: list[list[tuple[int, RowMutation | None]]]
) -> list[tuple[Segment, str]]:
    """Each partition's history split into ranges, the ranges in a random pack order that keeps
    each partition's ranges in offset order, each range segmented on its own."""
    queues = []
    for p, history in enumerate(histories):
        size, batch_bytes = rng.randrange(1, 6), rng.choice((None, 8, 40))
        queues.append(
            [
                (f"t/{p}[{i},{j})", list(build_segments(history[i:j], size, batch_bytes)))
                for i, j in random_split(rng, len(history))
            ]
        )
    pack = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        owner, segments = queue.pop(0)
        pack += [(segment, owner) for segment in segments]
    return pack


@pytest.mark.parametrize("seed", range(300))
def test_property_a_batch_shows_what_its_segments_one_by_one_show(seed: int) -> None:
    rng = random.Random(seed)
    field = rng.random() < 0.3  # versions from a field: one call per version, merged across ranges
    make = random_field_history if field else random_history
    histories = [
        [
            (offset, own_values(mutation, p))
            for offset, mutation in make(rng, rng.randrange(1, 15), keys=rng.randrange(1, 3))
        ]
        for p in range(rng.randrange(1, 5))
    ]  # partitions at the same offsets writing the same rows, each its own values: equal timestamps
    pack = _pack_segments(rng, histories)
    one_by_one, batched = HBaseVersionModel(), HBaseVersionModel()
    for segment, _ in pack:
        one_by_one.apply(segment)
    batcher = SegmentBatcher(rng.randrange(1, 30), rng.choice((None, 10, 60, 200)))
    batches = [batch for segment, owner in pack for batch in batcher.add(segment, owner)]
    last = batcher.finish()
    batches += [] if last is None else [last]
    for batch in batches:
        batched.apply_calls(batch.calls())
    assert batched.visible() == one_by_one.visible(), f"seed={seed}"
    sent = [segment for batch in batches for segment in batch.segments]
    assert sent == [segment for segment, _ in pack if not segment.is_empty()]  # all of them, in order


def test_property_catches_a_merge_that_loses_the_later_value() -> None:
    """Sanity check of the oracle: equal timestamps merged in the wrong order must show."""
    first = Segment(0, 3, 4, puts={b"r": {A: b"first"}})
    later = Segment(0, 3, 4, puts={b"r": {A: b"later"}})
    one_by_one, wrong = HBaseVersionModel(), HBaseVersionModel()
    one_by_one.apply(first)
    one_by_one.apply(later)
    wrong.apply_calls([WriteCall(3, {}, {b"r": {**later.puts[b"r"], **first.puts[b"r"]}})])
    assert wrong.visible() != one_by_one.visible()
