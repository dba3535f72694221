"""What the commit operator announces, driven through ``execute`` on the real ledger and
broker: the table Asset's event extra on a commit AND on a no-op re-commit (a retry after
the ledger said COMMITTED must not leave the epoch unannounced), metrics only on the
commit (counters are never doubled). Metrics go through Airflow's own StatsD logger to a
UDP socket of the test, and through Airflow's OpenTelemetry logger (chosen by Airflow's
``get_stats_factory`` from ``[metrics] otel_on``) to a local OTLP/HTTP endpoint. The same
paths inside ``airflow dags test``: tests/airflow/test_epoch_announcements.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from airflow.sdk.execution_time.context import OutletEventAccessors

from airflow_provider_eo.assets import asset_for
from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.operators.commit import CommitEpochOperator
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    conn_env_fixture,
    fill,
    kafka_fixture,
    ledger_fixture,
    pipeline_fixture,
    reserve,
)
from tests.metric_listeners import (  # noqa: F401 (fixtures)
    OtlpListener,
    StatsdListener,
    otel_fixture,
    statsd_fixture,
)
from tests.task_context import task_context

pytestmark = pytest.mark.integration

VOTE = {"records": 4, "bytes": 40, "bad_records": 1, "skipped_offsets": 0, "cells_written": 8}


def committed_epoch(stack: Any, ledger: Ledger, pipeline: Any, topic: str) -> CommitEpochOperator:
    """A WRITTEN epoch (partition 0: 3 records, cap 2; partition 1: 2) voted with :data:`VOTE`,
    and the commit operator for it."""
    name, _, file = pipeline(topics=[topic], caps={"max_records_per_partition": 2})
    fill(stack, topic, [3, 2])
    summary = reserve(name, file)
    ledger.vote_written(summary["epoch_id"], summary["fencing_token"], VOTE)
    return CommitEpochOperator(
        task_id="commit",
        pipeline=name,
        epoch_id=summary["epoch_id"],
        pipelines_file=file,
        table_asset=asset_for(load_pipeline(name, file)),
    )


def run_commit(op: CommitEpochOperator) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(XCom, extra of the table asset's event)`` of one ``execute``."""
    context = {**task_context(), "outlet_events": OutletEventAccessors()}
    assert op.table_asset is not None
    result = op.execute(context)  # type: ignore[arg-type]
    return result, dict(context["outlet_events"][op.table_asset].extra)


def test_commit_and_noop_recommit_both_announce_but_only_the_commit_sends_metrics(
    stack: Any, ledger: Ledger, pipeline: Any, kafka_topic_factory: Any, statsd: StatsdListener
) -> None:
    topic = kafka_topic_factory(partitions=2)
    op = committed_epoch(stack, ledger, pipeline, topic)
    name = op.pipeline
    assert op.outlets == [op.table_asset]

    first, first_extra = run_commit(op)
    epoch = ledger.get_epoch(int(op.epoch_id))
    assert epoch.committed_at is not None and epoch.written_at is not None
    expected_extra = {
        "epoch_id": epoch.epoch_id,
        "pipeline": name,
        "kind": "stream",
        "state": "COMMITTED",
        "dag_id": "eo_stream",
        "run_id": "run-1",
        "ranges": [
            {"topic": topic, "partition": 0, "start": 0, "end": 2, "records": 2},
            {"topic": topic, "partition": 1, "start": 0, "end": 2, "records": 2},
        ],
        "records_total": 4,
        "metrics": VOTE,
        "error": None,
        "created_at": epoch.created_at.isoformat(),
        "written_at": epoch.written_at.isoformat(),
        "committed_at": epoch.committed_at.isoformat(),
        "aborted_at": None,
        "bad_records": 1,
    }
    assert (first["action"], first_extra) == ("committed", expected_extra)
    ms = "%0.6f" % ((epoch.committed_at - epoch.created_at).total_seconds() * 1000)
    assert sorted(statsd.drain()) == sorted(
        [
            *(
                line
                for stat, value in [
                    ("records", 4),
                    ("bytes", 40),
                    ("bad_records", 1),
                    ("skipped_offsets", 0),
                    ("cells", 8),
                ]
                for line in (
                    f"airflow.eo.epoch.{stat}:{value}|c",
                    f"airflow.eo.epoch.{stat}.{name}:{value}|c",
                )
            ),
            f"airflow.eo.epoch.duration:{ms}|ms",
            f"airflow.eo.epoch.duration.{name}:{ms}|ms",
            "airflow.eo.partition.lag:1|g",  # 3 records in partition 0, the cap took 2
            "airflow.eo.partition.lag:0|g",
            f"airflow.eo.partition.lag.{name}.{topic}.0:1|g",
            f"airflow.eo.partition.lag.{name}.{topic}.1:0|g",
        ]
    )

    again, again_extra = run_commit(op)
    assert (again["action"], again_extra) == ("noop", expected_extra)
    assert statsd.drain() == []


def test_opentelemetry_receives_the_exact_tagged_metrics_of_a_commit(
    stack: Any, ledger: Ledger, pipeline: Any, kafka_topic_factory: Any, otel: OtlpListener
) -> None:
    from opentelemetry import metrics

    topic = kafka_topic_factory(partitions=2)
    op = committed_epoch(stack, ledger, pipeline, topic)
    run_commit(op)
    metrics.get_meter_provider().force_flush()  # type: ignore[attr-defined]  # what exit does

    epoch = ledger.get_epoch(int(op.epoch_id))
    assert epoch.committed_at is not None
    ms = (epoch.committed_at - epoch.created_at).total_seconds() * 1000
    tags = {"pipeline": op.pipeline, "kind": "stream"}

    def point(name: str, value: Any, **more: str) -> tuple[str, tuple[tuple[str, Any], ...], Any]:
        return (name, tuple(sorted({**tags, **more}.items())), value)

    received = otel.points("airflow.eo.")
    assert {point(name, value, **attrs) for name, attrs, value in received if attrs} == {
        point("airflow.eo.epoch.records", 4),
        point("airflow.eo.epoch.bytes", 40),
        point("airflow.eo.epoch.bad_records", 1),
        point("airflow.eo.epoch.skipped_offsets", 0),
        point("airflow.eo.epoch.cells", 8),
        point("airflow.eo.epoch.duration", (1, ms)),  # a histogram: (count, sum)
        point("airflow.eo.partition.lag", 1, topic=topic, partition="0"),
        point("airflow.eo.partition.lag", 0, topic=topic, partition="1"),
    }
    # the per-pipeline names ([metrics] legacy_names_on) arrive too, without attributes
    assert {(name, value) for name, attrs, value in received if not attrs} == {
        (f"airflow.eo.epoch.records.{op.pipeline}", 4),
        (f"airflow.eo.epoch.bytes.{op.pipeline}", 40),
        (f"airflow.eo.epoch.bad_records.{op.pipeline}", 1),
        (f"airflow.eo.epoch.skipped_offsets.{op.pipeline}", 0),
        (f"airflow.eo.epoch.cells.{op.pipeline}", 8),
        (f"airflow.eo.epoch.duration.{op.pipeline}", (1, ms)),
        (f"airflow.eo.partition.lag.{op.pipeline}.{topic}.0", 1),
        (f"airflow.eo.partition.lag.{op.pipeline}.{topic}.1", 0),
    }
