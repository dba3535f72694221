"""Broker unreachable (SIGSTOP) during a commit: a clear, bounded
error; the epoch stays WRITTEN; recovery re-commits it once the broker is back.

Each hook call uses a fresh client, which cannot finish its handshake with a stopped
broker, so no OffsetCommit is sent during the outage (nothing lands late on resume).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaError, EoKafkaHook
from airflow_provider_eo.operators.commit import CommitEpochOperator
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    conn_env_fixture,
    fill,
    kafka_fixture,
    ledger_fixture,
    pipeline_fixture,
    recover,
    reserve,
    vote,
)
from tests.kafka_helpers import wait_for_leaders
from tests.task_context import task_context

pytestmark = pytest.mark.integration
FAST = "eo_kafka_fast"


@contextmanager
def broker_paused(stack) -> Iterator[None]:
    pid = int((stack.state_dir / "pids" / "kafka.pid").read_text().strip())
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.fixture
def fast_kafka(stack, monkeypatch: pytest.MonkeyPatch) -> EoKafkaHook:
    """The stack's Kafka connection with a 2 s call timeout."""
    extra = {"bootstrap.servers": stack.kafka_bootstrap, "eo.timeout.ms": 2000}
    monkeypatch.setenv(f"AIRFLOW_CONN_{FAST.upper()}", json.dumps({"conn_type": "kafka", "extra": extra}))
    return EoKafkaHook(kafka_conn_id=FAST)


def test_hook_calls_fail_clearly_while_broker_unreachable(stack, fast_kafka, kafka_topic_factory) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="down")
    fill(stack, topic, [2])
    fast_kafka.commit_offsets("g-down", {(topic, 0): 1})
    with broker_paused(stack):
        with pytest.raises(EoKafkaError, match=rf"commit to group 'g-down' of {topic}\[0\]=2: "):
            fast_kafka.commit_offsets("g-down", {(topic, 0): 2})
        with pytest.raises(EoKafkaError, match=rf"watermarks of {topic}\[0\]: "):
            fast_kafka.watermarks([(topic, 0)])
        assert fast_kafka.test_connection()[0] is False
    wait_for_leaders(stack.kafka_bootstrap, topic, 1, timeout_s=60)  # a resumed broker re-registers first
    assert fast_kafka.committed_offsets("g-down", [(topic, 0)]) == {(topic, 0): 1}
    assert fast_kafka.watermarks([(topic, 0)]) == {(topic, 0): (0, 2)}


def test_commit_during_outage_leaves_written_then_recovery_commits(
    stack, ledger, kafka, fast_kafka, pipeline, kafka_topic_factory
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="outage")
    fill(stack, topic, [3, 1])
    name, group, file = pipeline(topics=[topic])
    summary = reserve(name, file, run_id="run-1")
    vote(ledger, summary)
    op = CommitEpochOperator(
        task_id="commit", pipeline=name, epoch_id=summary["epoch_id"], pipelines_file=file, kafka_conn_id=FAST
    )
    with broker_paused(stack), pytest.raises(EoKafkaError, match=f"commit to group '{group}'"):
        op.execute(task_context("run-1"))  # type: ignore[arg-type]
    assert ledger.get_epoch(summary["epoch_id"]).state == "WRITTEN"
    tps = [(topic, 0), (topic, 1)]
    assert kafka.committed_offsets(group, tps) == {(topic, 0): None, (topic, 1): None}
    result = recover(name, file, run_id="run-2")
    assert (result["recommitted"], result["aborted"], result["kept"]) == ([summary["epoch_id"]], [], [])
    assert ledger.get_epoch(summary["epoch_id"]).state == "COMMITTED"
    assert kafka.committed_offsets(group, tps) == {(topic, 0): 3, (topic, 1): 1}
