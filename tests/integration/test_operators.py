"""Reserve / commit / recover operators on the real ledger (PostgreSQL) and broker.

Driven through ``execute(context)`` (see ``operator_support.py``); ``test_operators_dag.py``
runs them inside Airflow with ``dag.test()``.
"""

from __future__ import annotations

import uuid

import pytest
from airflow.sdk.exceptions import AirflowSkipException
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.refusals import (
    CursorBeyondHighWatermark,
    IllegalTransition,
    InvalidRanges,
    OpenEpochConflict,
)
from airflow_provider_eo.operators.backfill import ReserveBackfillEpochOperator
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    commit,
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
from tests.task_context import task_context

pytestmark = pytest.mark.integration


def test_first_epoch_starts_at_group_offsets(stack, ledger, kafka, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="grpstart")
    fill(stack, topic, [5, 5])
    name, group, file = pipeline(topics=[topic])
    kafka.commit_offsets(group, {(topic, 0): 2, (topic, 1): 3})
    summary = reserve(name, file)
    assert ranges(summary) == [(topic, 0, 2, 5), (topic, 1, 3, 5)]
    assert summary["records_total"] == 5
    assert (summary["pipeline"], summary["kind"], summary["state"]) == (name, "stream", "RESERVED")
    assert (summary["dag_id"], summary["run_id"]) == ("eo_stream", "run-1")
    assert summary["fencing_token"] == ledger.get_epoch(summary["epoch_id"]).fencing_token


def test_caps_applied(stack, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="caps")
    fill(stack, topic, [5, 5])
    name, _, file = pipeline(topics=[topic], caps={"max_records_per_partition": 2, "max_records_total": 3})
    summary = reserve(name, file)
    assert ranges(summary) == [(topic, 0, 0, 2), (topic, 1, 0, 1)]
    assert summary["records_total"] == 3


def test_no_data_skips_and_opens_no_epoch(ledger, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="empty")
    name, _, file = pipeline(topics=[topic])
    with pytest.raises(AirflowSkipException, match="no new data"):
        reserve(name, file)
    assert ledger.epochs(EpochFilter(pipeline=name)) == []


def test_retry_in_same_run_returns_same_epoch(stack, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="retry")
    fill(stack, topic, [3])
    name, _, file = pipeline(topics=[topic])
    first = reserve(name, file, run_id="run-A")
    fill(stack, topic, [2])  # new data does not change the retried reservation
    assert reserve(name, file, run_id="run-A") == first
    with pytest.raises(OpenEpochConflict, match=f"open epoch {first['epoch_id']}"):
        reserve(name, file, run_id="run-B")


def test_new_topic_matching_pattern_joins(stack, ledger, pipeline, kafka_topic_factory) -> None:
    prefix = f"grow{uuid.uuid4().hex[:6]}"
    a = kafka_topic_factory(partitions=1, prefix=prefix)
    fill(stack, a, [3])
    name, _, file = pipeline(topic_pattern=rf"{prefix}-.*")
    first = reserve(name, file, run_id="r1")
    assert ranges(first) == [(a, 0, 0, 3)]
    vote(ledger, first)
    commit(name, file, first["epoch_id"])
    b = kafka_topic_factory(partitions=2, prefix=prefix)
    fill(stack, b, [2, 1])
    fill(stack, a, [1])
    second = reserve(name, file, run_id="r2")
    assert ranges(second) == sorted([(a, 0, 3, 4), (b, 0, 0, 2), (b, 1, 0, 1)])


def test_commit_publishes_exactly_range_ends(stack, ledger, kafka, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=3, prefix="pub")
    other = kafka_topic_factory(partitions=1, prefix="notpub")
    fill(stack, topic, [4, 0, 2])
    fill(stack, other, [2])
    name, group, file = pipeline(topics=[topic], caps={"max_records_per_partition": 3})
    kafka.commit_offsets(group, {(other, 0): 1})  # the group also tracks a topic outside the pipeline
    summary = reserve(name, file)
    assert ranges(summary) == [(topic, 0, 0, 3), (topic, 1, 0, 0), (topic, 2, 0, 2)]
    vote(ledger, summary)
    result = commit(name, file, str(summary["epoch_id"]))  # a rendered template is text
    assert result["action"] == "committed"
    # each range's end (not the high watermark 4 of partition 0; the empty range's end
    # is where the pipeline stands), nothing for partitions outside the epoch
    assert result["published"] == [
        {"topic": topic, "partition": 0, "offset": 3},
        {"topic": topic, "partition": 1, "offset": 0},
        {"topic": topic, "partition": 2, "offset": 2},
    ]
    tps = [(topic, 0), (topic, 1), (topic, 2), (other, 0)]
    assert kafka.committed_offsets(group, tps) == {(topic, 0): 3, (topic, 1): 0, (topic, 2): 2, (other, 0): 1}
    assert ledger.get_epoch(summary["epoch_id"]).state == "COMMITTED"
    # committing again is a no-op success: nothing is published
    kafka.commit_offsets(group, {(topic, 0): 1})
    again = commit(name, file, summary["epoch_id"])
    assert (again["action"], again["published"]) == ("noop", [])
    assert kafka.committed_offsets(group, tps) == {(topic, 0): 1, (topic, 1): 0, (topic, 2): 2, (other, 0): 1}


def test_commit_of_reserved_is_a_clear_error(stack, ledger, kafka, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="resv")
    fill(stack, topic, [2])
    name, group, file = pipeline(topics=[topic])
    summary = reserve(name, file)
    epoch_id = summary["epoch_id"]
    with pytest.raises(
        IllegalTransition, match=f"epoch {epoch_id} is RESERVED: .*RESERVED -> COMMITTED.*not been written"
    ):
        commit(name, file, epoch_id)
    assert kafka.committed_offsets(group, [(topic, 0)]) == {(topic, 0): None}
    assert ledger.get_epoch(epoch_id).state == "RESERVED"


def test_recovery_decisions(stack, ledger, kafka, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="recov")
    fill(stack, topic, [3])
    name, group, file = pipeline(topics=[topic])
    # WRITTEN epoch of a crashed run -> re-committed (published, COMMITTED)
    written = reserve(name, file, run_id="crashed-1")
    vote(ledger, written)
    assert recover(name, file, run_id="run-2") == {
        "pipeline": name, "kind": "stream", "recommitted": [written["epoch_id"]], "aborted": [], "kept": [],
    }  # fmt: skip
    assert ledger.get_epoch(written["epoch_id"]).state == "COMMITTED"
    assert kafka.committed_offsets(group, [(topic, 0)]) == {(topic, 0): 3}
    # RESERVED epoch of another run -> ABORTED, its range returns to the next reservation
    fill(stack, topic, [2])
    stale = reserve(name, file, run_id="crashed-2")
    backfill = ReserveBackfillEpochOperator(
        task_id="bf",
        pipeline=name,
        pipelines_file=file,
        ranges=[{"topic": topic, "partition": 0, "start": 0, "end": 2}],
    ).execute(task_context("backfill-run", dag_id="eo_backfill"))  # type: ignore[arg-type]
    result = recover(name, file, run_id="run-3")
    assert (result["recommitted"], result["aborted"], result["kept"]) == ([], [stale["epoch_id"]], [])
    assert ledger.get_epoch(stale["epoch_id"]).state == "ABORTED"
    assert ledger.get_epoch(backfill["epoch_id"]).state == "RESERVED"  # stream recovery leaves backfills
    again = reserve(name, file, run_id="run-3")
    assert ranges(again) == ranges(stale) == [(topic, 0, 3, 5)]
    # RESERVED epoch owned by the current run -> kept
    result = recover(name, file, run_id="run-3")
    assert (result["recommitted"], result["aborted"], result["kept"]) == ([], [], [again["epoch_id"]])
    assert ledger.get_epoch(again["epoch_id"]).state == "RESERVED"
    assert kafka.committed_offsets(group, [(topic, 0)]) == {(topic, 0): 3}


def test_backfill_epoch_commit_publishes_nothing(stack, ledger, kafka, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="bf")
    fill(stack, topic, [4, 4])
    name, group, file = pipeline(topics=[topic])
    op = ReserveBackfillEpochOperator(
        task_id="bf", pipeline=name, pipelines_file=file, ranges=f'[["{topic}", 1, 1, 3]]'
    )
    summary = op.execute(task_context("bf-1", dag_id="eo_backfill"))  # type: ignore[arg-type]
    assert (summary["kind"], ranges(summary), summary["records_total"]) == ("backfill", [(topic, 1, 1, 3)], 2)
    vote(ledger, summary)
    result = commit(name, file, summary["epoch_id"])
    assert (result["action"], result["published"]) == ("committed", [])
    assert kafka.committed_offsets(group, [(topic, 0), (topic, 1)]) == {(topic, 0): None, (topic, 1): None}
    assert ledger.cursors(name) == {}  # backfills never pin or move stream cursors


def test_backfill_range_outside_watermarks_is_an_error(stack, pipeline, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="bfbad")
    fill(stack, topic, [3])
    name, _, file = pipeline(topics=[topic])

    def attempt(start: int, end: int) -> None:
        rng = [{"topic": topic, "partition": 0, "start": start, "end": end}]
        op = ReserveBackfillEpochOperator(task_id="bf", pipeline=name, pipelines_file=file, ranges=rng)
        op.execute(task_context("bf-bad", dag_id="eo_backfill"))  # type: ignore[arg-type]

    with pytest.raises(
        InvalidRanges, match=rf"{topic}\[0\] \[1, 5\) is outside the available offsets \[0, 3\)"
    ):
        attempt(1, 5)
    with pytest.raises(
        ValueError, match=r"backfill topic\(s\) \['someone-else'\] are not topics of the pipeline"
    ):
        rng = [{"topic": "someone-else", "partition": 0, "start": 0, "end": 1}]
        ReserveBackfillEpochOperator(task_id="bf", pipeline=name, pipelines_file=file, ranges=rng).execute(
            task_context("bf-bad")  # type: ignore[arg-type]
        )


def test_topic_recreated_cursor_beyond_high_watermark(stack, ledger, pipeline) -> None:
    topic = f"recreate-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=15)
    try:
        fill(stack, topic, [4])
        name, _, file = pipeline(topics=[topic])
        first = reserve(name, file, run_id="r1")
        vote(ledger, first)
        commit(name, file, first["epoch_id"])
        assert ledger.cursors(name) == {(topic, 0): 4}
        admin.delete_topics([topic])[topic].result(timeout=15)
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=15)
        fill(stack, topic, [2])
        with pytest.raises(
            CursorBeyondHighWatermark, match=rf"cursor of {topic}\[0\] is 4 but its high watermark is 2"
        ):
            reserve(name, file, run_id="r2")
        assert ledger.open_epochs(name) == []
    finally:
        admin.delete_topics([topic])[topic].result(timeout=15)


def test_unknown_pipeline_names_file_and_pipeline(pipeline, ledger) -> None:
    _, _, file = pipeline(topics=["x"])
    with pytest.raises(ValueError, match=rf"{file}: pipeline 'nope': pipeline not declared"):
        reserve("nope", file)
