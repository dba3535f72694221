"""One pipeline's part of the demo: topic and table, produce, drain, replay, verify.

For a pipeline of the served DAG folder: create its topic (unless it exists) and its table
the README's way (:mod:`eo_devtools.demo.tables`), produce the feed's records, trigger the
stream DAG until the topic is drained (each run one epoch, capped by the pipeline), replay
an old range of partition 0 through the backfill DAG, then verify every invariant against
every record the topic holds with the feed's oracle (:mod:`eo_devtools.demo.verification`).
A pipeline with ``dead_letters.topic`` gets that topic created too, and the report says
how many records it holds (which must equal the ledger's dead letters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import happybase

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.dags.factory import backfill_dag_id, stream_dag_id
from airflow_provider_eo.hooks.hbase import EoHBaseHook
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from eo_devtools.demo.feeds import DemoFeed
from eo_devtools.demo.sample_events import produce_records
from eo_devtools.demo.scheduled_runs import ScheduledRuns
from eo_devtools.demo.tables import ensure_table
from eo_devtools.demo.topic_records import count_committed_records, ensure_topic, read_topic
from eo_devtools.demo.verification import Verification, verify_pipeline
from eo_devtools.stack.hbase_admin import HBaseTableTool
from eo_devtools.stack.stack import LocalStack

REPLAY_OFFSETS = 300


@dataclass
class PipelineDemo:
    """How one pipeline's demo went: ``failure`` names a failed run (then ``report`` is None);
    ``spark_mode`` how its epochs were written (``spark.mode``: ``submit`` or ``session``)."""

    pipeline: str
    topic: str
    spark_mode: str = "submit"
    produced: int = 0
    stream_runs: int = 0
    failure: str | None = None
    report: Verification | None = None
    dead_letter_topic: dict[str, Any] | None = None
    #: The closing audit's summary (``audit_step.audit_pipeline``); None: not run.
    audit: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Every run succeeded and every check passed (the audit, when run, clean)."""
        audited = self.audit is None or (
            self.audit["verdict"] == "clean" and self.audit["discrepancies"] == 0
        )
        return self.failure is None and self.report is not None and self.report.ok and audited

    def to_dict(self) -> dict[str, Any]:
        """The pipeline's part of the demo's JSON report."""
        figures = self.report.to_dict() if self.report is not None else {"ok": False}
        figures["ok"] = self.ok
        return {
            "pipeline": self.pipeline,
            "topic": self.topic,
            "spark_mode": self.spark_mode,
            "produced_this_run": self.produced,
            "stream_runs": self.stream_runs,
            **({"failure": self.failure} if self.failure else {}),
            **({"dead_letter_topic": self.dead_letter_topic} if self.dead_letter_topic else {}),
            **figures,
            **({"audit": self.audit} if self.audit is not None else {}),
        }


def run_pipeline_demo(
    stack: LocalStack,
    runs: ScheduledRuns,
    spec: PipelineSpec,
    feed: DemoFeed,
    *,
    partitions: int,
    max_runs: int,
    say: Callable[[str], None],
) -> PipelineDemo:
    """Run one pipeline's demo (see the module); never raises for a failed run or check."""
    topic = spec.topics[0]
    outcome = PipelineDemo(spec.name, topic, spec.spark.mode)
    partitions = ensure_topic(stack.kafka_bootstrap, topic, partitions)
    if spec.dead_letters is not None:  # the commit step publishes there; nothing else creates it
        ensure_topic(stack.kafka_bootstrap, spec.dead_letters.topic, 1)
    with _thrift() as hbase:
        table = ensure_table(
            HBaseTableTool(stack.state_dir),
            hbase,
            spec.hbase_table,
            spec.column_family,
            takes_tombstones=True,
        )
    say(table.describe())
    produced = produce_records(stack.kafka_bootstrap, topic, partitions, feed.events(topic))
    outcome.produced = len(produced)
    say(f"{spec.name}: produced {len(produced)} records to {topic} ({partitions} partitions)")

    stream, backfill = stream_dag_id(spec.name), backfill_dag_id(spec.name)
    runs.prepare(stream)
    runs.prepare(backfill)
    ledger = Ledger(stack.ledger_dsn)
    ends = {(r.topic, r.partition): r.offset + 1 for r in sorted(produced, key=lambda r: r.offset)}
    for run in range(1, max_runs + 1):
        result = runs.run(stream)
        outcome.stream_runs += 1
        cursors = ledger.cursors(spec.name)
        lag = sum(end - cursors.get(tp, 0) for tp, end in ends.items())
        say(f"{spec.name}: stream run {run} ({result.run_id}): {result.state}; lag now {lag}")
        if result.state != "success":
            outcome.failure = result.describe()
            return outcome
        if lag == 0:
            break

    end = min(REPLAY_OFFSETS, ends.get((topic, 0), 0))
    result = runs.run(backfill, conf={"partitions": [0], "start_offset": 0, "end_offset": end})
    say(f"{spec.name}: backfill replay of {topic}[0] offsets [0, {end}): {result.state}")
    if result.state != "success":
        outcome.failure = result.describe()
        return outcome

    everything = read_topic(stack.kafka_bootstrap, topic, partitions)
    oracle = feed.oracle(everything)
    with _thrift() as hbase:
        outcome.report = verify_pipeline(
            spec, everything, ledger=ledger, offsets=EoKafkaHook(), hbase=hbase, oracle=oracle, fold=feed.fold
        )
    if spec.dead_letters is not None:
        _check_dead_letter_topic(stack, spec.dead_letters.topic, outcome, outcome.report)
        say(f"{spec.name}: dead-letter topic {spec.dead_letters.topic}: {outcome.dead_letter_topic}")
    return outcome


def _check_dead_letter_topic(
    stack: LocalStack, topic: str, outcome: PipelineDemo, report: Verification
) -> None:
    """The dead-letter topic must hold each of the ledger's dead letters exactly once (each
    demo run commits, and so publishes, all of them)."""
    records = count_committed_records(stack.kafka_bootstrap, topic)
    outcome.dead_letter_topic = {"topic": topic, "records": records}
    if records != report.dead_letters:
        report.problems.append(
            f"dead-letter topic {topic}: {records} records != {report.dead_letters} dead letters"
        )


@contextmanager
def _thrift() -> Iterator[happybase.Connection]:
    """A Thrift connection for one step (the Thrift server closes one left idle across DAG runs),
    through the pipeline's ``eo_hbase`` as the write tasks open it: SASL/GSSAPI or TLS when the
    connection says so (``clients/hbase_thrift.py``)."""
    connection = EoHBaseHook().get_conn()
    try:
        yield connection
    finally:
        connection.close()
