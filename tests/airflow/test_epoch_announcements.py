"""Committed epochs reach Airflow's metrics and Asset events: through real Airflow
(``airflow dags test``), Spark, the ledger, Apache Kafka and Apache HBase.

Metrics are received on a UDP socket of the test (StatsD; OpenTelemetry is exercised
in-process by tests/integration/test_commit_announcements.py), asset events are read
from the metadata DB. Every expected value comes from the ledger's epoch (its vote
metrics, its timestamps) and Kafka's watermarks, never from the code under test. A
recover task that settles nothing sends nothing: the stream test sees exactly the
commit's lines and one event.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import pytest

from airflow_provider_eo.dags.factory import RECOVERY_DAG_ID, stream_dag_id
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochKind, EpochState, Ledger
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.protocol import EpochProtocol, Reserved
from eo_devtools.demo.airflow_runner import AirflowRunner
from eo_devtools.demo.sample_events import produce_records
from tests.airflow.asset_events import asset_events, expected_extra
from tests.airflow.conftest import PipelineFactory, PipelineUnderTest
from tests.conftest import StackInfo
from tests.metric_listeners import StatsdListener

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

PARTITIONS = 2
CAP = 6  # records per partition per epoch: the first epoch leaves a lag behind
VOTE = {"records": 9, "bytes": 321, "bad_records": 2, "skipped_offsets": 1, "cells_written": 17}


def events(count: int) -> Iterator[tuple[bytes | None, bytes | None]]:
    for i in range(count):
        value = b"{not json" if i % 7 == 3 else json.dumps({"seq": i}).encode()
        yield f"k{i % 5}".encode(), value


@pytest.fixture
def kafka_hook(stack: StackInfo, monkeypatch: pytest.MonkeyPatch) -> EoKafkaHook:
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)
    return EoKafkaHook()


@pytest.fixture
def statsd() -> Iterator[StatsdListener]:
    listener = StatsdListener()
    yield listener
    listener.close()


def runner_with(pipe: PipelineUnderTest, env: dict[str, str]) -> AirflowRunner:
    return AirflowRunner(pipe.runner.home, {}, pipelines_file=pipe.file, extra_env={**pipe.runner.env, **env})


def expected_statsd_lines(epoch: Epoch, lag: dict[tuple[str, int], int]) -> Counter[str]:
    """The exact lines (prefix ``airflow``) for one committed epoch, tagged and per-pipeline names."""
    metrics = epoch.metrics or {}
    p = epoch.pipeline
    assert epoch.committed_at is not None and "." not in p
    ms = "%0.6f" % ((epoch.committed_at - epoch.created_at).total_seconds() * 1000)
    lines = []
    for name, key in [
        ("records", "records"),
        ("bytes", "bytes"),
        ("bad_records", "bad_records"),
        ("skipped_offsets", "skipped_offsets"),
        ("cells", "cells_written"),
    ]:
        lines += [
            f"airflow.eo.epoch.{name}:{metrics[key]}|c",
            f"airflow.eo.epoch.{name}.{p}:{metrics[key]}|c",
        ]
    lines += [f"airflow.eo.epoch.duration:{ms}|ms", f"airflow.eo.epoch.duration.{p}:{ms}|ms"]
    for (topic, partition), value in sorted(lag.items()):
        lines += [
            f"airflow.eo.partition.lag:{value}|g",
            f"airflow.eo.partition.lag.{p}.{topic}.{partition}:{value}|g",
        ]
    return Counter(lines)


def eo_lines(lines: list[str]) -> Counter[str]:
    return Counter(line for line in lines if line.startswith("airflow.eo."))


@pytest.mark.spark
def test_stream_epoch_sends_exact_statsd_metrics_and_one_asset_event(
    stack: StackInfo,
    pipeline_factory: PipelineFactory,
    ledger: Ledger,
    kafka_hook: EoKafkaHook,
    statsd: StatsdListener,
) -> None:
    pipe = pipeline_factory(
        partitions=PARTITIONS, bad_records="dead_letter", caps={"max_records_per_partition": CAP}
    )
    produce_records(stack.kafka_bootstrap, pipe.topic, PARTITIONS, events(40))

    outcome = runner_with(pipe, statsd.env()).run(stream_dag_id(pipe.spec.name))
    assert outcome.state == "success", outcome.log[-6000:]

    (epoch,) = ledger.epochs(EpochFilter(pipeline=pipe.spec.name))
    assert (epoch.kind, epoch.state) == (EpochKind.STREAM, EpochState.COMMITTED)
    metrics = epoch.metrics or {}
    assert metrics["bad_records"] > 0 and metrics["records"] == epoch.record_count
    high = kafka_hook.watermarks([r.tp for r in epoch.ranges])
    lag = {r.tp: high[r.tp][1] - r.end for r in epoch.ranges}
    assert all(value > 0 for value in lag.values())  # the cap left records behind

    assert eo_lines(statsd.drain()) == expected_statsd_lines(epoch, lag)
    # one event, from the commit task (the recover task re-committed nothing: no event)
    assert asset_events(pipe) == [(stream_dag_id(pipe.spec.name), "commit", expected_extra(epoch))]


def written_epoch_of_a_dead_run(
    stack: StackInfo, pipe: PipelineUnderTest, ledger: Ledger, kafka_hook: EoKafkaHook
) -> Epoch:
    """A stream epoch a (fictitious, finished) run reserved and voted WRITTEN with :data:`VOTE`,
    then never committed: what recovery re-commits."""
    produce_records(stack.kafka_bootstrap, pipe.topic, PARTITIONS, events(20))
    protocol = EpochProtocol(ledger, kafka=lambda: kafka_hook)
    reservation = protocol.reserve_stream(
        pipe.spec, RunIdentity(stream_dag_id(pipe.spec.name), "manual__dead")
    )
    assert isinstance(reservation, Reserved)
    epoch = reservation.epoch
    return ledger.vote_written(epoch.epoch_id, epoch.fencing_token, VOTE)


def test_recovery_recommit_sends_statsd_metrics_and_one_asset_event_through_the_alias(
    stack: StackInfo,
    pipeline_factory: PipelineFactory,
    ledger: Ledger,
    kafka_hook: EoKafkaHook,
    statsd: StatsdListener,
) -> None:
    pipe = pipeline_factory(partitions=PARTITIONS, caps={"max_records_per_partition": CAP})
    written = written_epoch_of_a_dead_run(stack, pipe, ledger, kafka_hook)

    outcome = runner_with(pipe, statsd.env()).run(RECOVERY_DAG_ID)
    assert outcome.state == "success", outcome.log[-6000:]

    epoch = ledger.get_epoch(written.epoch_id)
    assert epoch.state is EpochState.COMMITTED and epoch.metrics == VOTE
    high = kafka_hook.watermarks([r.tp for r in epoch.ranges])
    lag = {r.tp: high[r.tp][1] - r.end for r in epoch.ranges}
    assert eo_lines(statsd.drain()) == expected_statsd_lines(epoch, lag)
    assert asset_events(pipe) == [(RECOVERY_DAG_ID, f"recover__{pipe.spec.name}", expected_extra(epoch))]
