"""Whole epochs in-process against the local stack: reserve, write (the real driver and
tasks, without Spark), commit. For proofs that need real Kafka and real HBase but not
spark-submit (test_spark_app.py covers that path).

:class:`EpochRoundTrip` resolves its connections from ``AIRFLOW_CONN_*`` values exactly as
the write application does (``spark.settings.task_settings``), so a Kafka connection
``extra`` given here reaches the hook and the range reader alike.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import happybase
import pytest
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.config import PipelineSpec, parse_pipelines_text
from airflow_provider_eo.config.spec_digest import spec_digest
from airflow_provider_eo.errors import EoError
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Epoch, Ledger, PartitionRange
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.protocol import EpochProtocol, Settled
from airflow_provider_eo.ledger.protocol.commit_path import DeadLetterTopics
from airflow_provider_eo.spark.driver.task_runner import SparkTasks, task_failure
from airflow_provider_eo.spark.driver.task_settings import task_settings
from airflow_provider_eo.spark.driver.write_epoch import ExitCode, SparkRunner, write_epoch
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.task_errors import ExecutorTaskError, TaskErrorData
from airflow_provider_eo.spark.task.write_task import TaskSettings, run_task
from eo_devtools.ledger_direct import reserve_backfill_epoch, reserve_stream_epoch
from tests.conftest import StackInfo

Rows = dict[bytes, dict[bytes, bytes]]


def ledger_connection(dsn: str) -> str:
    """``AIRFLOW_CONN_EO_LEDGER`` (JSON form) for the ledger database of ``dsn``."""
    p = parse_dsn(dsn)
    return json.dumps(
        {"conn_type": "postgres", "host": p["host"], "port": int(p["port"]), "login": p["user"],
         "password": p["password"], "schema": p["dbname"]}
    )  # fmt: skip


def kafka_connection(bootstrap: str, extra: Mapping[str, object] | None = None) -> str:
    """``AIRFLOW_CONN_EO_KAFKA`` (JSON form): the broker plus further librdkafka ``extra``."""
    return json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap, **(extra or {})}})


def pipeline_spec(name: str, topic: str, table: str, **options: Any) -> PipelineSpec:
    """One pipeline validated as the pipelines YAML is (``options`` are further YAML fields)."""
    entry = {"name": name, "topics": [topic], "hbase": {"table": table}, **options}
    return parse_pipelines_text(json.dumps({"pipelines": [entry]}), "<test>")[name]


def in_process_runner(settings: TaskSettings, tasks: Sequence[TaskRange]) -> SparkTasks:
    """The driver's runner without Spark: every task in this process, in order."""
    started = time.monotonic()
    metrics = [run_task(settings, task).to_dict() for task in tasks]
    return SparkTasks(metrics, started, time.monotonic())


def failing_as_in_spark(settings: TaskSettings, tasks: Sequence[TaskRange]) -> SparkTasks:
    """:func:`in_process_runner` whose task's ``EoError`` reaches the driver as under Spark:
    the executor's marker line decoded into ``TaskFailed`` (``task_runner.task_failure``),
    so the driver logs it and exits with ``TASK_FAILED``."""
    started = time.monotonic()
    metrics = []
    for task in tasks:
        try:
            metrics.append(run_task(settings, task).to_dict())
        except EoError as exc:
            data = TaskErrorData.of(exc, settings.pipeline, settings.epoch_id, task)
            raise task_failure(ExecutorTaskError(data)) from exc
    return SparkTasks(metrics, started, time.monotonic())


def scan(stack: StackInfo, table: str) -> Rows:
    """Visible state of ``table``: every row's newest cells."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        return dict(connection.table(table).scan())
    finally:
        connection.close()


@dataclass(frozen=True)
class EpochRow:
    """What the ledger holds about one epoch, without ids, tokens and timestamps."""

    kind: str
    state: str
    ranges: tuple[tuple[int, int, int], ...]  # (partition, start, end)
    metrics: tuple[tuple[int, int, int], ...]  # per partition: (partition, records, skipped_offsets)


def epoch_row(epoch: Epoch) -> EpochRow:
    """The comparable form of an epoch (metrics of a voted epoch, () otherwise)."""
    partitions = (epoch.metrics or {}).get("partitions", [])
    return EpochRow(
        epoch.kind.value,
        epoch.state.value,
        tuple((r.partition, r.start, r.end) for r in epoch.ranges),
        tuple((p["partition"], p["records"], p["skipped_offsets"]) for p in partitions),
    )


class EpochRoundTrip:
    """Runs one pipeline's epochs in-process; connections come from ``env`` (``AIRFLOW_CONN_*``)."""

    def __init__(
        self,
        spec: PipelineSpec,
        ledger_dsn: str,
        env: Mapping[str, str],
        dead_letter_topics: DeadLetterTopics | None = None,
    ) -> None:
        self.spec = spec
        self.ledger_dsn = ledger_dsn
        self.env = dict(env)
        self.dead_letter_topics = dead_letter_topics
        with self.connections():
            self.kafka = EoKafkaHook()
            assert self.kafka.settings.config  # resolved now, while the variables are set: kept

    @contextmanager
    def connections(self) -> Iterator[None]:
        """The pipeline's ``AIRFLOW_CONN_*`` variables set for the duration."""
        with pytest.MonkeyPatch.context() as patch:
            for name, value in self.env.items():
                patch.setenv(name, value)
            yield

    def reserve(self, run_id: str | None = None) -> Epoch | None:
        """Reserve the next stream epoch (None: no new data)."""
        with Ledger(self.ledger_dsn) as ledger:
            return reserve_stream_epoch(
                ledger, self.spec, self.kafka, dag_id="d", run_id=run_id or uuid.uuid4().hex
            )

    def reserve_backfill(self, ranges: Sequence[PartitionRange]) -> Epoch:
        """Reserve a backfill epoch over ``ranges`` (checked against the watermarks)."""
        with Ledger(self.ledger_dsn) as ledger:
            watermarks = self.kafka.watermarks([r.tp for r in ranges])
            return reserve_backfill_epoch(
                ledger, self.spec, ranges, dag_id="b", run_id=uuid.uuid4().hex, watermarks=watermarks
            )

    def write(
        self, epoch_id: int, runner: SparkRunner = in_process_runner, *, spec: PipelineSpec | None = None
    ) -> ExitCode:
        """The write step as the application runs it (naming its mapping's digest), tasks
        in-process (``runner``); ``spec``: the one the writer runs, else the pipeline's."""
        running = spec or self.spec
        with self.connections(), Ledger(self.ledger_dsn) as ledger:
            return write_epoch(
                ledger,
                running.name,
                epoch_id,
                lambda: task_settings(running, epoch_id),
                running.spark.split_size,
                spec_digest=spec_digest(running),
                runner=runner,
            )

    def commit(self, epoch_id: int) -> Epoch:
        """The protocol's commit: publish (stream), mark COMMITTED, publish the dead letters
        (through ``dead_letter_topics`` when given, else the pipeline's real topic)."""
        with self.connections(), Ledger(self.ledger_dsn) as ledger:
            topics = self.dead_letter_topics or self.kafka.dead_letter_topic
            protocol = EpochProtocol(ledger, kafka=lambda: self.kafka, dead_letter_topics=topics)
            return protocol.commit(epoch_id, pipeline=self.spec).epoch

    def recover(self) -> Settled:
        """The next run's recovery (``d``/``next-run``; every other run dead): RESERVED
        epochs aborted, WRITTEN ones committed."""
        with self.connections(), Ledger(self.ledger_dsn) as ledger:
            topics = self.dead_letter_topics or self.kafka.dead_letter_topic
            protocol = EpochProtocol(ledger, kafka=lambda: self.kafka, dead_letter_topics=topics)
            return protocol.recover(self.spec, RunIdentity("d", "next-run"), lambda _run: False)

    def write_and_commit(self, epoch: Epoch) -> Epoch:
        """Write ``epoch`` (must exit OK), then commit it."""
        code = self.write(epoch.epoch_id)
        assert code == ExitCode.OK, f"epoch {epoch.epoch_id} write exited {code!r}"
        return self.commit(epoch.epoch_id)

    def run_stream_epoch(self) -> Epoch | None:
        """Reserve, write, commit one stream epoch; None when there was no new data."""
        epoch = self.reserve()
        return None if epoch is None else self.write_and_commit(epoch)

    def epochs(self) -> list[EpochRow]:
        """Every epoch of the pipeline, oldest first."""
        with Ledger(self.ledger_dsn) as ledger:
            return [epoch_row(e) for e in ledger.epochs(EpochFilter(pipeline=self.spec.name))]

    def group_offsets(self, partitions: Sequence[int] = (0,)) -> dict[int, int | None]:
        """The consumer group's committed offset per partition of the pipeline's topic."""
        topic = self.spec.topics[0]
        committed = self.kafka.committed_offsets(self.spec.group_id, [(topic, p) for p in partitions])
        return {p: committed[(topic, p)] for p in partitions}
