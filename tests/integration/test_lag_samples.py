"""Lag samples (migration 0005) on the real ledger and broker: written by the commit path
(the commit operator, recovery's re-commit) from the watermarks the lag metric reads, never failing what took
them, and read back bounded (every k-th sample, the partitions with the largest lag). The
wait step's samples: tests/integration/test_wait_for_records.py (and under the real
triggerer, tests/airflow/test_wait_under_triggerer.py)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg2
import pytest

from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.lag import LagSample, SampledPartition, store_sample
from airflow_provider_eo.ledger.protocol import EpochProtocol
from tests.chart_rows import sample_rows
from tests.integration.ledger_support import stack_kafka_hook
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    commit,
    conn_env_fixture,
    fill,
    kafka_fixture,
    ledger_fixture,
    pipeline_fixture,
    recover,
    reserve,
    vote,
)
from tests.kafka_helpers import produce

pytestmark = pytest.mark.integration


def committed(
    stack: Any, ledger: Ledger, pipeline: Any, topic: str, counts: list[int]
) -> tuple[str, str, int]:
    """A pipeline over ``topic`` after ``counts`` records per partition and one epoch
    reserved, voted and committed by the operators: ``(name, pipelines file, epoch id)``."""
    name, _group, file = pipeline(topics=[topic])
    fill(stack, topic, counts)
    summary = reserve(name, file)
    vote(ledger, summary)
    commit(name, file, summary["epoch_id"])
    return name, file, int(summary["epoch_id"])


def test_commits_and_recovery_store_the_lag_they_measured(
    stack, ledger, pipeline, kafka_topic_factory
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="lagsample")
    name, _group, file = pipeline(topics=[topic])
    fill(stack, topic, [3, 2])
    first = reserve(name, file)
    vote(ledger, first)
    produce(stack.kafka_bootstrap, topic, [(f"n{i}", "v") for i in range(4)], partition=0)  # high 7
    commit(name, file, first["epoch_id"])
    commit(name, file, first["epoch_id"])  # a no-op commit stores nothing
    assert sample_rows(stack.ledger_dsn, name) == [
        ("commit", first["epoch_id"], 4, [(topic, 0, 3, 7, 4), (topic, 1, 2, 2, 0)]),
    ]
    # a WRITTEN epoch of a dead run, re-committed by the next run's recovery
    second = reserve(name, file, run_id="crashed")
    vote(ledger, second)
    produce(stack.kafka_bootstrap, topic, [("m", "v")], partition=1)  # high 3
    assert recover(name, file, run_id="next")["recommitted"] == [second["epoch_id"]]
    assert sample_rows(stack.ledger_dsn, name)[1:] == [
        ("commit", second["epoch_id"], 1, [(topic, 0, 7, 7, 0), (topic, 1, 2, 3, 1)]),
    ]


def test_a_sample_that_cannot_be_stored_fails_nothing(
    stack, ledger, pipeline, kafka_topic_factory, caplog: pytest.LogCaptureFixture
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="lagfail")
    name, _group, file = pipeline(topics=[topic])
    fill(stack, topic, [2])
    summary = reserve(name, file)
    vote(ledger, summary)
    down = Ledger("host=127.0.0.1 port=1 dbname=eo connect_timeout=2")  # the samples' ledger is gone

    class SamplesGone(Ledger):
        def record_lag_sample(self, sample: LagSample) -> int:
            return down.record_lag_sample(sample)

    caplog.set_level(logging.WARNING)
    with SamplesGone(stack.ledger_dsn) as committing:
        outcome = EpochProtocol(committing, kafka=lambda: stack_kafka_hook(stack)).commit(
            int(summary["epoch_id"]), pipeline=load_pipeline(name, file)
        )  # returns: the commit stands
    assert (outcome.epoch.state, dict(outcome.high_watermarks)) == ("COMMITTED", {(topic, 0): 2})
    assert (
        f"lag sample not stored pipeline={name} source=commit epoch_id={summary['epoch_id']}" in caplog.text
    )
    unknown = LagSample("no_such_pipeline", "wait", None, (SampledPartition(topic, 0, 0, 2, 2),))
    assert store_sample(ledger, unknown, "partitions=1") is False  # refused by the pipelines' foreign key
    assert "lag sample not stored pipeline=no_such_pipeline source=wait partitions=1" in caplog.text
    assert ledger.get_epoch(int(summary["epoch_id"])).state == "COMMITTED"
    assert sample_rows(stack.ledger_dsn, name) == []


def test_a_window_of_samples_is_bounded(stack, ledger, pipeline) -> None:
    name, _group, _file = pipeline(topics=["t"])
    with psycopg2.connect(stack.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO eo.pipelines (name) VALUES (%s)", (name,))
    conn.close()
    ids = []
    for i in range(25):  # partition p lags p * i behind in sample i
        rows = tuple(SampledPartition("t", p, 100, 100 + p * i, p * i) for p in range(12))
        ids.append(ledger.record_lag_sample(LagSample(name, "wait", None, rows)))
    since = datetime.now(UTC) - timedelta(hours=1)
    found = ledger.pipeline_charts(
        name, since=since, last=None, max_epochs=5, max_samples=10, max_partitions=3
    )
    lag = found.lag
    # 25 samples, at most 10: every 3rd counted from the newest (ages 0, 3, ..., 24)
    assert (lag.in_window, lag.every, lag.partitions) == (25, 3, 12)
    assert [s.sample_id for s in lag.samples] == ids[::3]
    assert lag.shown_partitions == (("t", 9), ("t", 10), ("t", 11))  # the largest lag in the newest
    assert [[(p.partition, p.lag) for p in s.shown] for s in lag.samples] == [
        [(9, 9 * i), (10, 10 * i), (11, 11 * i)] for i in range(0, 25, 3)
    ]
    assert [s.total_lag for s in lag.samples] == [66 * i for i in range(0, 25, 3)]
    assert (found.epochs, found.epochs_in_window) == ([], 0)
