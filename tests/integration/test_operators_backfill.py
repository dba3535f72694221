"""Backfill reservation from the Trigger form's params, and recovery across kinds and live runs."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo.ledger.errors import InvalidRanges
from airflow_provider_eo.operators.backfill import ReserveBackfillEpochOperator
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    conn_env_fixture,
    ctx,
    fill,
    kafka_fixture,
    ledger_fixture,
    pipeline_fixture,
    ranges,
    recover,
    reserve,
    vote,
)

pytestmark = pytest.mark.integration


def backfill(name: str, file: str, run_id: str = "bf-1", **params: object) -> dict:
    op = ReserveBackfillEpochOperator(task_id="reserve", pipeline=name, pipelines_file=file)
    form = {"topics": [], "partitions": [], "start_offset": None, "end_offset": None}
    form |= {"start_time": None, "end_time": None, **params}
    return op.execute(ctx(run_id, dag_id="eo_backfill", params=form))  # type: ignore[arg-type]


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
