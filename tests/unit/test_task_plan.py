"""Driver-side planning (split sizes), metric aggregation and decoding of executor errors."""

from __future__ import annotations

import pytest

from airflow_provider_eo.spark.driver.task_plan import (
    CoverageError,
    aggregate_metrics,
    plan_tasks,
    split_range,
)
from airflow_provider_eo.spark.driver.task_runner import task_failure
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.task_errors import ExecutorTaskError, TaskErrorData
from airflow_provider_eo.spark.task.write_task import TaskMetrics


@pytest.mark.parametrize(
    ("start", "end", "size", "bounds"),
    [
        (0, 10, 4, [(0, 3), (3, 6), (6, 10)]),
        (5, 9, 4, [(5, 9)]),
        (5, 9, 100, [(5, 9)]),
        (0, 10, 1, [(i, i + 1) for i in range(10)]),
        (100, 107, 2, [(100, 101), (101, 103), (103, 105), (105, 107)]),
        (3, 3, 4, []),
    ],
)
def test_split_range_is_contiguous_and_bounded(start: int, end: int, size: int, bounds: list) -> None:
    parts = split_range(TaskRange("t", 1, start, end), size)
    assert [(p.start, p.end) for p in parts] == bounds
    assert all(p.end - p.start <= size and (p.topic, p.partition) == ("t", 1) for p in parts)


def test_split_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="split_size must be >= 1, got 0"):
        split_range(TaskRange("t", 0, 0, 1), 0)


def test_plan_tasks_keeps_ledger_order_and_skips_empty_ranges() -> None:
    ranges = [TaskRange("a", 0, 0, 3), TaskRange("a", 1, 7, 7), TaskRange("b", 0, 2, 4)]
    assert plan_tasks(ranges, 2) == [
        TaskRange("a", 0, 0, 1),
        TaskRange("a", 0, 1, 3),
        TaskRange("b", 0, 2, 4),
    ]


def _m(topic: str, p: int, start: int, end: int, **counts: int) -> dict:
    return TaskMetrics(topic, p, start, end, **counts).to_dict()  # type: ignore[arg-type]


def test_aggregate_sums_and_lists_partitions() -> None:
    ranges = [TaskRange("a", 0, 0, 4), TaskRange("a", 1, 3, 3)]
    tasks = [
        _m("a", 0, 2, 4, records=1, skipped_offsets=1, cells_written=5, bad_records=1, bytes=10, segments=1),
        _m("a", 0, 0, 2, records=2, cells_written=1, tombstones=2, changes_skipped=1, bytes=3, segments=2),
    ]
    assert aggregate_metrics(ranges, tasks, 1.23456) == {
        "records": 3,
        "skipped_offsets": 1,
        "cells_written": 6,
        "tombstones": 2,
        "changes_skipped": 1,
        "bad_records": 1,
        "bytes": 13,
        "segments": 3,
        "schema_fetches": 0,
        "schema_ids": [],
        "tasks": 2,
        "duration_s": 1.235,
        "partitions": [
            {
                "topic": "a",
                "partition": 0,
                "start": 0,
                "end": 4,
                "records": 3,
                "skipped_offsets": 1,
                "bad_records": 1,
            },
            {
                "topic": "a",
                "partition": 1,
                "start": 3,
                "end": 3,
                "records": 0,
                "skipped_offsets": 0,
                "bad_records": 0,
            },
        ],
    }


def test_aggregate_sums_schema_fetches_and_unions_schema_ids_sorted() -> None:
    tasks = [
        {**_m("a", 0, 0, 2, records=2, schema_fetches=2), "schema_ids": [9, 3]},
        {**_m("a", 0, 2, 4, records=2, schema_fetches=1), "schema_ids": [3]},
        {**_m("a", 1, 0, 1, records=1, schema_fetches=3), "schema_ids": [12, 1, 9]},
    ]
    ranges = [TaskRange("a", 0, 0, 4), TaskRange("a", 1, 0, 1)]
    metrics = aggregate_metrics(ranges, tasks, 0.5)
    assert (metrics["schema_fetches"], metrics["schema_ids"]) == (6, [1, 3, 9, 12])


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ([_m("a", 0, 0, 2)], r"tasks cover \[\(0, 2\)\] of a/0, expected \[0, 4\)"),
        ([_m("a", 0, 0, 2), _m("a", 0, 1, 4)], r"tasks cover \[\(0, 2\), \(1, 4\)\]"),
        ([_m("a", 0, 0, 4), _m("a", 0, 0, 4)], r"tasks cover \[\(0, 4\), \(0, 4\)\]"),
        ([_m("a", 0, 0, 4), _m("z", 0, 0, 1)], r"partitions outside the epoch: \[\('z', 0\)\]"),
    ],
)
def test_aggregate_refuses_tasks_that_do_not_cover_the_ranges_exactly(tasks: list, message: str) -> None:
    with pytest.raises(CoverageError, match=message):
        aggregate_metrics([TaskRange("a", 0, 0, 4)], tasks, 0.0)


def test_task_failure_decodes_the_executors_error_data() -> None:
    data = TaskErrorData("RangeReadError", "cannot read t partition 0 to 9", "p", 7, "t", 0, 3, 9)
    marker = str(ExecutorTaskError(data))
    wrapped = (
        "An error occurred while calling o42.collect.\n: org.apache.spark.SparkException: Job aborted\n"
        "Traceback (most recent call last):\n  File ...\n"
        "airflow_provider_eo.spark.task.range_reader.RangeReadError: cannot read t partition 0 to 9\n\n"
        "The above exception was the direct cause of the following exception:\n"
        f"airflow_provider_eo.spark.task.task_errors.ExecutorTaskError: {marker}\n"
        " SQLSTATE: 38000\n\tat org.apache.spark..."
    )
    failed = task_failure(RuntimeError(wrapped))
    assert str(failed) == "RangeReadError: cannot read t partition 0 to 9"
    assert failed.error == data
    assert marker == (
        'EO_TASK_ERROR {"end": 9, "epoch_id": 7, "message": "cannot read t partition 0 to 9", '
        '"partition": 0, "pipeline": "p", "start": 3, "topic": "t", "type": "RangeReadError"}'
    )


def test_task_failure_without_error_data_is_sparks_first_line() -> None:
    named_only = "Job aborted\nairflow_provider_eo.spark.range_reader.RangeReadError: cannot read t"
    failed = task_failure(RuntimeError(named_only))  # a class name is not decoded: only a marker line
    assert (str(failed), failed.error) == ("Job aborted", None)
    assert (
        str(task_failure(RuntimeError("\nJob aborted: executor lost\nmore"))) == "Job aborted: executor lost"
    )
    assert str(task_failure(RuntimeError(""))) == "RuntimeError"
    assert str(task_failure(RuntimeError("EO_TASK_ERROR {not json\nnext"))) == "EO_TASK_ERROR {not json"


def test_error_data_survives_multi_line_messages() -> None:
    data = TaskErrorData("BadRecordError", "line one\nline two \u00e9", "p", 1, "t", 2, 0, 5)
    spark_text = f"Job aborted\nairflow_provider_eo.x.ExecutorTaskError: {ExecutorTaskError(data)}\n\tat ..."
    assert TaskErrorData.find(spark_text) == data
    assert str(task_failure(RuntimeError(spark_text))) == "BadRecordError: line one\nline two \u00e9"
