"""The wait-for-records step on the real ledger and broker: the pending rule, the
operator's first check and deferral, and ``RecordsAvailableTrigger.run()`` driven
directly with asyncio (the triggerer itself: ``tests/airflow/test_wait_under_triggerer.py``),
and the lag samples each stores (a check that finds records at once, the trigger's first
poll and the poll that finds records; never the polls in between).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowSkipException, TaskDeferred

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.planning.new_records import PendingRecords
from airflow_provider_eo.ledger.protocol import read_positions
from airflow_provider_eo.operators.wait import DEFERRAL_BACKSTOP, WaitForRecordsOperator
from airflow_provider_eo.triggers.records_available import RecordsAvailableTrigger
from tests.chart_rows import sample_rows
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    commit,
    conn_env_fixture,
    fill,
    kafka_fixture,
    ledger_fixture,
    pipeline_fixture,
    reserve,
    vote,
)
from tests.kafka_helpers import delete_records_before, grow_partitions, produce
from tests.task_context import task_context

pytestmark = pytest.mark.integration

Pipeline = Callable[..., tuple[str, str, str]]


def _pending(ledger: Ledger, kafka: EoKafkaHook, name: str, topic: str) -> PendingRecords:
    return read_positions(name, [topic], None, ledger=ledger, kafka=kafka).pending()


def _drained(stack: Any, pipeline: Pipeline, topic: str, counts: list[int]) -> tuple[str, str]:
    """A pipeline over ``topic`` whose cursors are at the ends of ``counts`` records (one
    committed epoch, or only pins when there are none): nothing is pending."""
    name, _group, file = pipeline(topics=[topic])
    fill(stack, topic, counts)
    try:
        summary = reserve(name, file)
    except AirflowSkipException:
        return name, file
    with Ledger(stack.ledger_dsn) as ledger:
        vote(ledger, summary)
    commit(name, file, summary["epoch_id"])
    return name, file


def _samples(stack: Any, name: str) -> list[tuple[str, int, list[tuple[str, int, int, int, int]]]]:
    """The pipeline's lag samples: ``(source, total lag, [(topic, partition, cursor, high, lag)])``."""
    return [(source, total, rows) for source, _epoch, total, rows in sample_rows(stack.ledger_dsn, name)]


def test_pending_follows_pins_cursors_commits_and_new_partitions(
    stack, ledger, kafka, pipeline, kafka_topic_factory
) -> None:
    topic = kafka_topic_factory(partitions=3, prefix="wait")
    name, _group, file = pipeline(topics=[topic])
    fill(stack, topic, [4, 0, 2])

    # never reserved: every partition is still to pin (the reservation pins at first sight)
    fresh = _pending(ledger, kafka, name, topic)
    assert (fresh.pending, fresh.unpinned, fresh.out_of_range) == (
        {},
        {(topic, 0): 4, (topic, 1): 0, (topic, 2): 2},
        (),
    )
    assert (fresh.total, fresh.ready) == (0, True)

    # reserved (pinned at earliest) but not committed: the cursor has not moved yet
    summary = reserve(name, file)
    reserved = _pending(ledger, kafka, name, topic)
    assert (reserved.pending, reserved.unpinned, reserved.total, reserved.ready) == (
        {(topic, 0): 4, (topic, 1): 0, (topic, 2): 2}, {}, 6, True
    )  # fmt: skip

    # committed: nothing past the cursors, the run would wait
    vote(ledger, summary)
    commit(name, file, summary["epoch_id"])
    drained = _pending(ledger, kafka, name, topic)
    assert drained.to_json() == {
        "pipeline": name,
        "pending": 0,
        "partitions": [{"topic": topic, "partition": p, "pending": 0} for p in range(3)],
        "unpinned": [],
        "out_of_range": [],
    }
    assert drained.ready is False

    produce(stack.kafka_bootstrap, topic, [(f"n{i}", "v") for i in range(3)], partition=1)
    arrived = _pending(ledger, kafka, name, topic)
    assert (arrived.pending, arrived.total, arrived.ready) == (
        {(topic, 0): 0, (topic, 1): 3, (topic, 2): 0}, 3, True
    )  # fmt: skip

    grow_partitions(stack.kafka_bootstrap, topic, 4)
    grown = _pending(ledger, kafka, name, topic)
    assert (grown.total, grown.unpinned, grown.ready) == (3, {(topic, 3): 0}, True)


def test_records_lost_to_retention_do_not_wait_and_the_operator_returns_at_once(
    stack, ledger, kafka, pipeline, kafka_topic_factory
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="waitgap")
    name, file = _drained(stack, pipeline, topic, [5])
    produce(stack.kafka_bootstrap, topic, [(f"n{i}", "v") for i in range(3)])  # offsets 5..7
    assert delete_records_before(stack.kafka_bootstrap, topic, 0, 7) == 7  # cursor 5 < low 7
    expected = {
        "pipeline": name,
        "pending": 1,  # [7, 8): what a reservation can still read
        "partitions": [{"topic": topic, "partition": 0, "pending": 1}],
        "unpinned": [],
        "out_of_range": [{"topic": topic, "partition": 0}],
    }
    assert _pending(ledger, kafka, name, topic).to_json() == expected
    wait = WaitForRecordsOperator(
        task_id="wait", pipeline=name, pipelines_file=file, timeout=60, poll_interval=5
    )
    assert wait.execute(task_context()) == expected  # type: ignore[arg-type]
    # the commit's sample, then the check's: lag counts from the cursor (5), not the low watermark
    assert _samples(stack, name) == [("commit", 0, [(topic, 0, 5, 5, 0)]), ("wait", 3, [(topic, 0, 5, 8, 3)])]


def test_operator_defers_to_the_trigger_when_nothing_is_pending_and_skips_on_timeout(
    stack, pipeline, kafka_topic_factory
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="waitdefer")
    name, file = _drained(stack, pipeline, topic, [2, 1])
    wait = WaitForRecordsOperator(
        task_id="wait", pipeline=name, pipelines_file=file, timeout=30, poll_interval=2
    )
    before = time.time()
    with pytest.raises(TaskDeferred) as deferred:
        wait.execute(task_context())  # type: ignore[arg-type]
    after = time.time()
    assert [source for source, _, _ in _samples(stack, name)] == ["commit"]  # a deferring check stores none
    assert (deferred.value.method_name, deferred.value.timeout) == (
        "execute_complete", timedelta(seconds=30) + DEFERRAL_BACKSTOP
    )  # fmt: skip
    classpath, kwargs = deferred.value.trigger.serialize()
    deadline = kwargs.pop("deadline")
    assert before + 30 <= deadline <= after + 30
    assert (classpath, kwargs) == (
        "airflow_provider_eo.triggers.records_available.RecordsAvailableTrigger",
        {
            "pipeline": name,
            "topics": [topic],
            "topic_pattern": None,
            "poll_interval": 2.0,
            "ledger_conn_id": "eo_ledger",  # connection ids only: the metadata DB stores these
            "kafka_conn_id": "eo_kafka",
        },
    )
    with pytest.raises(
        AirflowSkipException, match=rf"pipeline '{name}': no records past the cursors within 30s"
    ):
        wait.execute_complete(task_context(), {"status": "timeout", "pipeline": name, "pending": 0})  # type: ignore[arg-type]
    event = {"status": "records", "pipeline": name, "pending": 3, "partitions": [], "unpinned": []}
    assert wait.execute_complete(task_context(), event) == {  # type: ignore[arg-type]
        "pipeline": name, "pending": 3, "partitions": [], "unpinned": []
    }  # fmt: skip


def _trigger(name: str, topic: str, *, seconds: float, poll: float) -> RecordsAvailableTrigger:
    return RecordsAvailableTrigger(
        pipeline=name, topics=[topic], topic_pattern=None, deadline=time.time() + seconds, poll_interval=poll
    )


def test_trigger_times_out_without_records(stack, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="waittimeout")
    name, _file = _drained(stack, pipeline, topic, [3, 0])

    trigger = _trigger(name, topic, seconds=1.5, poll=0.5)

    async def first_event() -> dict[str, Any]:
        events = trigger.run()
        event = await asyncio.wait_for(anext(events), timeout=30)
        assert time.time() >= trigger.deadline  # not before the deadline
        await events.aclose()
        return dict(event.payload)

    payload = asyncio.run(first_event())
    assert isinstance(payload.pop("waited_seconds"), float)
    assert payload == {"status": "timeout", "pipeline": name, "pending": 0}
    # polls every 0.5 s for 1.5 s: only the first stores its sample (then one a minute at most)
    assert _samples(stack, name) == [
        ("commit", 0, [(topic, 0, 3, 3, 0), (topic, 1, 0, 0, 0)]),
        ("wait", 0, [(topic, 0, 3, 3, 0), (topic, 1, 0, 0, 0)]),
    ]


def test_trigger_fires_with_the_exact_pending_count_when_records_arrive(
    stack, pipeline, kafka_topic_factory
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="waitfire")
    name, _file = _drained(stack, pipeline, topic, [2, 0])

    async def scenario() -> dict[str, Any]:
        events = _trigger(name, topic, seconds=120, poll=0.25).run()
        waiting = asyncio.ensure_future(anext(events))
        # several checks find nothing: the trigger keeps waiting
        done, _ = await asyncio.wait({waiting}, timeout=1.0)
        assert done == set()
        await asyncio.to_thread(
            produce, stack.kafka_bootstrap, topic, [(f"k{i}", "v") for i in range(5)], partition=1
        )
        event = await asyncio.wait_for(waiting, timeout=30)
        await events.aclose()
        return dict(event.payload)

    event = asyncio.run(scenario())
    # the trigger's first poll and the poll that found the records
    assert _samples(stack, name)[1:] == [
        ("wait", 0, [(topic, 0, 2, 2, 0), (topic, 1, 0, 0, 0)]),
        ("wait", 5, [(topic, 0, 2, 2, 0), (topic, 1, 0, 5, 5)]),
    ]
    assert event == {
        "status": "records",
        "pipeline": name,
        "pending": 5,
        "partitions": [
            {"topic": topic, "partition": 0, "pending": 0},
            {"topic": topic, "partition": 1, "pending": 5},
        ],
        "unpinned": [],
        "out_of_range": [],
    }
