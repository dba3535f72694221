"""The audit's row buckets: every cell in exactly one bucket, the count projected from a
pass over budget, capped, and the over-budget answer survives a Spark task's pickling."""

from __future__ import annotations

import pickle

from airflow_provider_eo.audit.expected_writes import ExpectedCell, ExpectedDelete, ExpectedSegment
from airflow_provider_eo.audit.row_buckets import MAX_BUCKETS, IndexOverBudget, RowBuckets, buckets_after


def test_every_cell_and_delete_falls_in_exactly_one_bucket() -> None:
    cells = tuple(ExpectedCell(f"r{i}".encode(), b"d:c", i, b"v", i) for i in range(200))
    deletes = tuple(ExpectedDelete(f"r{i}".encode(), b"d", i + 1, i) for i in range(0, 200, 7))
    whole = ExpectedSegment(cells, deletes)
    parts = [RowBuckets(index, 5).part_of(whole) for index in range(5)]
    assert sorted(c.offset for p in parts for c in p.cells) == list(range(200))
    assert sorted(d.offset for p in parts for d in p.deletes) == list(range(0, 200, 7))
    assert all(p.cells for p in parts)  # 200 rows spread over the 5 buckets
    by_row = {c.row: i for i, p in enumerate(parts) for c in p.cells}
    assert all(
        by_row[d.row] == i for i, p in enumerate(parts) for d in p.deletes
    )  # a row's delete with its cells
    assert RowBuckets().part_of(whole) is whole


def test_bucket_count_projected_from_the_share_of_the_window_seen_and_capped() -> None:
    # 3 MB after a quarter of a 1,000-offset window, budget 1 MB: 12 MB projected, x1.25 -> 15
    assert buckets_after(1, IndexOverBudget(3_000_000, 250), 1000, 1_000_000) == 15
    assert buckets_after(4, IndexOverBudget(1_000_001, 1000), 1000, 1_000_000) == 8  # at least twice
    assert buckets_after(4, IndexOverBudget(10**12, 1), 10**9, 1) == MAX_BUCKETS
    assert buckets_after(2, IndexOverBudget(10**9, 5), 10, 100) == 10  # never more than the offsets


def test_over_budget_survives_pickling() -> None:
    found = pickle.loads(pickle.dumps(IndexOverBudget(5, 7)))
    assert (found.used, found.offsets_done, str(found)) == (5, 7, "audit index at 5 bytes after 7 offsets")


def test_a_spark_task_gets_its_share_of_the_budget() -> None:
    buckets = RowBuckets(1, 3, 1000)
    assert buckets.per_task(2) == RowBuckets(1, 3, 500)
    assert buckets.per_task(1) is buckets and RowBuckets(0, 1, 0).per_task(4).budget == 0  # none stays none
    assert RowBuckets(0, 1, 3).per_task(8).budget == 1
