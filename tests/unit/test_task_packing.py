"""Packing task ranges into Spark tasks: exact plans for tiny, mixed, huge and very many ranges."""

from __future__ import annotations

import pytest

from airflow_provider_eo.spark.driver.task_packing import pack_count, pack_tasks
from airflow_provider_eo.spark.driver.task_plan import plan_tasks
from airflow_provider_eo.spark.records import TaskRange


def ranges(sizes: list[int], topic: str = "t") -> list[TaskRange]:
    """One range ``[0, size)`` per partition, partition = index."""
    return [TaskRange(topic, p, 0, size) for p, size in enumerate(sizes)]


def shape(packs: list[tuple[TaskRange, ...]]) -> list[list[tuple[int, int, int]]]:
    return [[(r.partition, r.start, r.end) for r in pack] for pack in packs]


def test_many_tiny_ranges_fill_the_slots_in_ledger_order() -> None:
    packs = pack_tasks(ranges([5] * 10), split_size=100, slots=2)
    # LPT over equal sizes alternates packs; each pack keeps ledger order
    assert shape(packs) == [
        [(0, 0, 5), (2, 0, 5), (4, 0, 5), (6, 0, 5), (8, 0, 5)],
        [(1, 0, 5), (3, 0, 5), (5, 0, 5), (7, 0, 5), (9, 0, 5)],
    ]


def test_mixed_ranges_balance_offsets_longest_first() -> None:
    tasks = plan_tasks(ranges([10, 1, 1, 7, 3, 0]), split_size=10)  # the empty range gives no task
    packs = pack_tasks(tasks, split_size=10, slots=2)
    # 22 offsets / 10 -> 3 packs: 10 | 7 | 3, then 1 and 1 onto the lightest (3, then 4)
    assert shape(packs) == [[(0, 0, 10)], [(1, 0, 1), (2, 0, 1), (4, 0, 3)], [(3, 0, 7)]]
    assert sorted(r.label for pack in packs for r in pack) == sorted(r.label for r in tasks)


def test_a_single_huge_range_is_split_as_today_one_piece_a_task() -> None:
    tasks = plan_tasks(ranges([1_000_000]), split_size=100_000)
    packs = pack_tasks(tasks, split_size=100_000, slots=2)
    assert [len(pack) for pack in packs] == [1] * 10
    assert (
        [pack[0] for pack in packs]
        == tasks
        == [TaskRange("t", 0, i * 100_000, (i + 1) * 100_000) for i in range(10)]
    )


def test_ten_thousand_partitions_make_a_plan_bounded_by_slots_and_offsets() -> None:
    tasks = ranges([3] * 10_000)
    packs = pack_tasks(tasks, split_size=100_000, slots=4)
    assert [len(pack) for pack in packs] == [2_500] * 4  # 30,000 offsets fit one split: the slots bound
    assert sorted(r.label for pack in packs for r in pack) == sorted(r.label for r in tasks)
    assert all(
        [r.partition for r in pack] == sorted(r.partition for r in pack) for pack in packs
    )  # ledger order
    more = pack_tasks(tasks, split_size=1_000, slots=4)  # 30,000 offsets / 1,000: 30 packs of 1,000
    assert [sum(r.end - r.start for r in pack) for pack in more] == [1_002] * 10 + [999] * 20


def test_never_more_packs_than_ranges_and_none_empty() -> None:
    assert pack_tasks([], split_size=10, slots=8) == []
    assert shape(pack_tasks(ranges([4, 4]), split_size=1, slots=8)) == [[(0, 0, 4)], [(1, 0, 4)]]
    # a replay selection with no offset in a range reads nothing: it still rides in a pack
    empty = TaskRange("t", 5, 0, 9, ())
    packs = pack_tasks([empty, *ranges([2, 2])], split_size=10, slots=3)
    assert shape(packs) == [[(5, 0, 9)], [(0, 0, 2)], [(1, 0, 2)]]
    assert pack_count([TaskRange("t", 0, 0, 100, (10, 11))], split_size=1, slots=1) == 1


@pytest.mark.parametrize(("split_size", "slots"), [(0, 1), (1, 0)])
def test_bounds_below_one_are_refused(split_size: int, slots: int) -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        pack_tasks(ranges([1]), split_size=split_size, slots=slots)
