"""Backfill reservation from the Trigger form's params, and recovery across kinds and live runs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo.ledger.model.refusals import InvalidRanges
from airflow_provider_eo.operators.backfill import ReserveBackfillEpochOperator
from tests.conftest import StackInfo
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    conn_env_fixture,
    fill,
    kafka_fixture,
    ledger_fixture,
    pipeline_fixture,
    ranges,
    recover,
    reserve,
    vote,
)
from tests.kafka_helpers import delete_records_before, produce, recent_timestamp_ms
from tests.task_context import task_context

pytestmark = pytest.mark.integration


def backfill(name: str, file: str, run_id: str = "bf-1", **params: object) -> dict:
    op = ReserveBackfillEpochOperator(task_id="reserve", pipeline=name, pipelines_file=file)
    form = {"topics": [], "partitions": [], "start_offset": None, "end_offset": None}
    form |= {"start_time": None, "end_time": None, **params}
    return op.execute(task_context(run_id, dag_id="eo_backfill", params=form))  # type: ignore[arg-type]


def test_params_offsets_all_partitions_default_end(stack, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=3, prefix="bfp")
    fill(stack, topic, [4, 2, 1])
    name, _, file = pipeline(topics=[topic])
    summary = backfill(name, file, start_offset=1)
    # partition 2 holds only offset 0: [1, 1) is empty and left out
    assert ranges(summary) == [(topic, 0, 1, 4), (topic, 1, 1, 2)]
    assert (summary["kind"], summary["records_total"]) == ("backfill", 4)
    assert backfill(name, file, start_offset=1) == summary  # retry of the same run


def test_params_partition_filter_end_offset_and_time_start(stack, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="bfq")
    fill(stack, topic, [5, 5])
    name, _, file = pipeline(topics=[topic])
    first = backfill(name, file, run_id="bf-a", topics=[topic], partitions=[1], start_offset=2, end_offset=4)
    assert ranges(first) == [(topic, 1, 2, 4)]
    # the epoch of the Unix era precedes every record: from offset 0 to the high watermark
    second = backfill(name, file, run_id="bf-b", start_time="1970-01-01T00:00:00+00:00")
    assert ranges(second) == [(topic, 0, 0, 5), (topic, 1, 0, 5)]


def iso(ms: int) -> str:
    """The Trigger form's ISO-8601 text of a CreateTime in ms (UTC)."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def test_params_time_bounds_resolve_to_exact_offsets(
    stack: StackInfo, pipeline: Callable[..., tuple[str, str, str]], kafka_topic_factory: Callable[..., str]
) -> None:
    """start_time/end_time resolve per partition to the first record stamped at or after
    them (offsets_for_times on records batched several per lz4 batch); the end is exclusive."""
    topic = kafka_topic_factory(partitions=2, prefix="bft")
    t0 = recent_timestamp_ms()
    records = [(f"k{i}", f"v{i}") for i in range(8)]
    # partition 0: offsets 0..7 stamped t0 + 0, 1, ... 7 s; partition 1: 0..3 at t0 + 0.5, 2.5, 4.5, 6.5 s
    produce(stack.kafka_bootstrap, topic, records, partition=0, timestamps=[t0 + 1000 * i for i in range(8)])
    produce(
        stack.kafka_bootstrap,
        topic,
        records[:4],
        partition=1,
        timestamps=[t0 + 500 + 2000 * i for i in range(4)],
    )
    name, _, file = pipeline(topics=[topic])
    both = backfill(name, file, run_id="bf-t1", start_time=iso(t0 + 2000), end_time=iso(t0 + 5500))
    assert ranges(both) == [(topic, 0, 2, 6), (topic, 1, 1, 3)]
    assert both["records_total"] == 6
    # a record stamped exactly at end_time is not included, one exactly at start_time is
    exact = backfill(name, file, run_id="bf-t2", start_time=iso(t0 + 2500), end_time=iso(t0 + 4500))
    assert ranges(exact) == [(topic, 0, 3, 5), (topic, 1, 1, 2)]
    # no end: each partition's high watermark
    tail = backfill(name, file, run_id="bf-t3", start_time=iso(t0 + 6500))
    assert ranges(tail) == [(topic, 0, 7, 8), (topic, 1, 3, 4)]
    # end after every record: the high watermark; naive times are UTC
    naive = iso(t0 + 60_000).removesuffix("+00:00")
    everything = backfill(name, file, run_id="bf-t4", start_offset=0, end_time=naive)
    assert ranges(everything) == [(topic, 0, 0, 8), (topic, 1, 0, 4)]
    with pytest.raises(AirflowSkipException, match="nothing to backfill"):
        backfill(name, file, run_id="bf-t5", start_time=iso(t0 + 60_000))
    # records deleted before offset 3: a start time among them starts at the first record held
    assert delete_records_before(stack.kafka_bootstrap, topic, 0, 3) == 3
    held = backfill(name, file, run_id="bf-t6", start_time=iso(t0), end_time=iso(t0 + 5500))
    assert ranges(held) == [(topic, 0, 3, 6), (topic, 1, 0, 3)]


def test_params_errors_are_specific(stack, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="bfe")
    fill(stack, topic, [3])
    name, _, file = pipeline(topics=[topic])
    with pytest.raises(ValueError, match="exactly one of 'start_offset' and 'start_time'"):
        backfill(name, file)
    with pytest.raises(ValueError, match="exactly one of 'start_offset' and 'start_time'"):
        backfill(name, file, start_offset=0, start_time="2026-01-01T00:00:00Z")
    with pytest.raises(ValueError, match=rf"'partitions': {topic} has no partition\(s\) \[7\]"):
        backfill(name, file, partitions=[7], start_offset=0)
    with pytest.raises(ValueError, match=rf"{topic}\[0\]: start 5 is after the end 3 \(high watermark\)"):
        backfill(name, file, start_offset=5)
    with pytest.raises(
        InvalidRanges, match=rf"{topic}\[0\] \[0, 9\) is outside the available offsets \[0, 3\)"
    ):
        backfill(name, file, start_offset=0, end_offset=9)
    with pytest.raises(AirflowSkipException, match="nothing to backfill"):
        backfill(name, file, start_offset=3)


def test_recovery_keeps_live_owners_and_all_kinds(stack, ledger, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="rlive")
    fill(stack, topic, [3])
    name, _, file = pipeline(topics=[topic])
    stream = reserve(name, file, run_id="live-stream")
    bf_written = backfill(name, file, run_id="bf-written", start_offset=0, end_offset=1)
    vote(ledger, bf_written)
    bf_stale = backfill(name, file, run_id="bf-stale", start_offset=1, end_offset=2)

    def dr_count(dag_id: str, run_ids: list[str], states: list[str]) -> int:
        assert states == ["queued", "running"]
        return int(run_ids == ["live-stream"])

    result = recover(name, file, run_id="recovery-1", kind=None, get_dr_count=dr_count)
    assert result == {
        "pipeline": name,
        "kind": "all",
        "recommitted": [bf_written["epoch_id"]],
        "aborted": [bf_stale["epoch_id"]],
        "kept": [stream["epoch_id"]],
    }
    states = {e: ledger.get_epoch(e).state.value for e in (stream["epoch_id"], bf_written["epoch_id"])}
    assert states == {stream["epoch_id"]: "RESERVED", bf_written["epoch_id"]: "COMMITTED"}
    assert ledger.get_epoch(bf_stale["epoch_id"]).state == "ABORTED"
