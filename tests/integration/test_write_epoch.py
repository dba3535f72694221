"""The driver's protocol (check, run tasks, vote) against the real ledger, Spark replaced by a runner.

Covers what a spark-submit run cannot reach deterministically: the token rotated
*while* tasks run (the vote is fenced out and changes nothing), task failure
(not voted), tasks that do not cover the ranges (never voted), empty epochs. Epochs are
reserved through the real ``EoKafkaHook`` on one real two-partition topic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.ledger import Epoch, EpochState, Ledger
from airflow_provider_eo.spark.driver.task_plan import CoverageError
from airflow_provider_eo.spark.driver.task_runner import SparkTasks
from airflow_provider_eo.spark.driver.write_epoch import ExitCode, TaskFailed, write_epoch
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.write_task import TaskMetrics, TaskSettings
from eo_devtools.ledger_direct import reserve_stream_epoch, rotate_fencing_token
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, make_spec, stack_kafka_hook
from tests.kafka_helpers import created_topic, produce

pytestmark = pytest.mark.integration

# The runners below never look at the settings; the driver reads the row key (its version warning).
SETTINGS: Any = SimpleNamespace(mapping=MappingSpec())


@pytest.fixture
def ledger(stack: StackInfo) -> Iterator[Ledger]:
    with fresh_database(stack.ledger_dsn) as dsn, Ledger(dsn) as ledger:
        yield ledger


@pytest.fixture(scope="module")
def topic(stack: StackInfo) -> Iterator[str]:
    """Two partitions: five records in partition 0, none in partition 1."""
    with created_topic(stack.kafka_bootstrap, partitions=2, prefix="write-epoch") as name:
        produce(stack.kafka_bootstrap, name, [(f"k{i}", "{}") for i in range(5)], partition=0)
        yield name


@pytest.fixture
def reserve(stack: StackInfo, ledger: Ledger, topic: str) -> Callable[[], Epoch]:
    """``reserve()``: pipeline ``p``'s first stream epoch: topic/0 [0, 5), empty topic/1 [0, 0)."""
    hook = stack_kafka_hook(stack)

    def first_epoch() -> Epoch:
        epoch = reserve_stream_epoch(ledger, make_spec("p", topics=[topic]), hook, dag_id="d", run_id="r")
        assert epoch is not None
        return epoch

    return first_epoch


JOB_SECONDS = 2.5  # how long the fake runner says its Spark job took


def fake_runner(tasks_seen: list[TaskRange]) -> Any:
    def run(_settings: TaskSettings, tasks: Sequence[TaskRange]) -> SparkTasks:
        tasks_seen.extend(tasks)
        ended = time.monotonic()
        metrics = [
            TaskMetrics(t.topic, t.partition, t.start, t.end, records=t.end - t.start).to_dict()
            for t in tasks
        ]
        return SparkTasks(metrics, ended - JOB_SECONDS, ended)

    return run


def test_success_votes_written_with_aggregated_metrics(
    ledger: Ledger, reserve: Callable[[], Epoch], topic: str
) -> None:
    epoch = reserve()
    seen: list[TaskRange] = []
    code = write_epoch(ledger, "p", epoch.epoch_id, lambda: SETTINGS, 2, runner=fake_runner(seen))
    assert code == ExitCode.OK
    assert seen == [TaskRange(topic, 0, 0, 1), TaskRange(topic, 0, 1, 3), TaskRange(topic, 0, 3, 5)]
    voted = ledger.get_epoch(epoch.epoch_id)
    metrics = dict(voted.metrics or {})
    metrics.pop("duration_s")
    assert (
        metrics.pop("vote_after_tasks_s") >= 0
    )  # the job's end to the vote (placed in ledger/model/phases.py)
    assert (voted.state, metrics) == (
        EpochState.WRITTEN,
        {
            "records": 5, "skipped_offsets": 0, "cells_written": 0, "tombstones": 0, "changes_skipped": 0,
            "bad_records": 0,
            "bytes": 0, "segments": 0, "schema_fetches": 0, "schema_ids": [], "tasks": 3,
            "spark_tasks_s": JOB_SECONDS, "spark_task_count": 3,  # a runner that does not pack
            "partitions": [
                {"topic": topic, "partition": 0, "start": 0, "end": 5, "records": 5, "skipped_offsets": 0,
                 "bad_records": 0},
                {"topic": topic, "partition": 1, "start": 0, "end": 0, "records": 0, "skipped_offsets": 0,
                 "bad_records": 0},
            ],
        },
    )  # fmt: skip


def test_token_rotated_while_tasks_run_fences_out_the_vote(
    ledger: Ledger, reserve: Callable[[], Epoch]
) -> None:
    epoch = reserve()
    inner = fake_runner([])

    def rotating_runner(settings: TaskSettings, tasks: Sequence[TaskRange]) -> SparkTasks:
        rotate_fencing_token(ledger, epoch.epoch_id)  # e.g. a newer attempt took the epoch over
        return inner(settings, tasks)  # type: ignore[no-any-return]

    code = write_epoch(ledger, "p", epoch.epoch_id, lambda: SETTINGS, 10, runner=rotating_runner)
    after = ledger.get_epoch(epoch.epoch_id)
    assert code == ExitCode.FENCED_OUT
    assert (after.state, after.metrics, after.written_at) == (EpochState.RESERVED, None, None)
    assert after.fencing_token != epoch.fencing_token


def test_task_failure_is_not_voted(ledger: Ledger, reserve: Callable[[], Epoch]) -> None:
    epoch = reserve()

    def failing(_settings: TaskSettings, _tasks: Sequence[TaskRange]) -> SparkTasks:
        raise TaskFailed("RangeReadError: cannot read t partition 0 up to end offset 5: ...")

    assert (
        write_epoch(ledger, "p", epoch.epoch_id, lambda: SETTINGS, 10, runner=failing) == ExitCode.TASK_FAILED
    )
    assert ledger.get_epoch(epoch.epoch_id) == epoch


def test_partial_task_results_are_never_voted(
    ledger: Ledger, reserve: Callable[[], Epoch], topic: str
) -> None:
    epoch = reserve()

    def partial(settings: TaskSettings, tasks: Sequence[TaskRange]) -> SparkTasks:
        return fake_runner([])(settings, tasks[:-1])  # type: ignore[no-any-return]

    with pytest.raises(CoverageError, match=rf"tasks cover \[\(0, 2\)\] of {topic}/0, expected \[0, 5\)"):
        write_epoch(ledger, "p", epoch.epoch_id, lambda: SETTINGS, 3, runner=partial)
    assert ledger.get_epoch(epoch.epoch_id) == epoch


def test_epoch_of_another_pipeline_is_invalid_and_unchanged(
    ledger: Ledger, reserve: Callable[[], Epoch]
) -> None:
    epoch = reserve()
    assert write_epoch(ledger, "other", epoch.epoch_id, lambda: SETTINGS, 10) == ExitCode.INVALID
    assert ledger.get_epoch(epoch.epoch_id) == epoch


def test_retry_under_the_same_token_after_the_vote_is_a_no_op(
    ledger: Ledger, reserve: Callable[[], Epoch]
) -> None:
    epoch = reserve()
    token = epoch.fencing_token
    assert write_epoch(ledger, "p", epoch.epoch_id, lambda: SETTINGS, 10, fencing_token=token,
                       runner=fake_runner([])) == ExitCode.OK  # fmt: skip
    voted = ledger.get_epoch(epoch.epoch_id)
    seen: list[TaskRange] = []
    code = write_epoch(
        ledger, "p", epoch.epoch_id, lambda: SETTINGS, 10, fencing_token=token, runner=fake_runner(seen)
    )
    assert (code, seen, ledger.get_epoch(epoch.epoch_id)) == (ExitCode.OK, [], voted)
    other = write_epoch(ledger, "p", epoch.epoch_id, lambda: SETTINGS, 10, fencing_token="0" * 32,
                        runner=fake_runner(seen))  # fmt: skip
    no_token = write_epoch(ledger, "p", epoch.epoch_id, lambda: SETTINGS, 10, runner=fake_runner(seen))
    assert (other, no_token, seen) == (ExitCode.FENCED_OUT, ExitCode.FENCED_OUT, [])
