"""The window's sizing and a range slot's buffer (range_window.py), without Kafka."""

from __future__ import annotations

import pytest

from airflow_provider_eo.spark.records import KafkaRecord, TaskRange
from airflow_provider_eo.spark.task.range_window import RangeSlot, window_size


@pytest.mark.parametrize(
    ("queue_bytes", "expected"),
    [
        (8 << 20, (32, 262_144)),
        (1 << 20, (16, 65_536)),
        (None, (16, 65_536)),
        (1 << 17, (2, 65_536)),
        (1000, (1, 1000)),
    ],
)
def test_window_size_shares_the_pre_fetch_bound(queue_bytes: int | None, expected: tuple[int, int]) -> None:
    assert window_size(queue_bytes) == expected


def _record(offset: int, size: int) -> KafkaRecord:
    return KafkaRecord("t", 0, offset, b"k", b"v" * (size - 1), (), None)


def test_a_slot_buffers_in_order_stops_at_its_bound_and_completes_at_its_last_offset() -> None:
    slot = RangeSlot(TaskRange("t", 0, 5, 9), bound=100)
    assert (slot.next_offset, slot.stops_fetching, slot.finished) == (5, False, False)
    slot.add(_record(5, 60))
    slot.add(_record(7, 60))  # a gap at 6
    assert (slot.next_offset, slot.bytes, slot.stops_fetching, slot.finished) == (8, 120, True, False)
    assert slot.take().offset == 5
    assert (slot.bytes, slot.stops_fetching) == (60, False)
    slot.add(_record(8, 1))
    assert (slot.done, slot.finished, [r.offset for r in slot.records]) == (True, True, [7, 8])
