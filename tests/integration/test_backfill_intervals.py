"""Backfills over a data interval (a run of Airflow's backfill) and chunked backfills, on real
Kafka record timestamps, the real ledger and real HBase (the write step's driver in-process).

Records carry explicit CreateTimes. A backfill run's data interval ``[start, end)`` becomes
offsets by timestamp lookups; a run larger than ``backfill.max_records_per_epoch`` is several
epochs (chunks); a run resumed after a crash writes only the chunks it had not committed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from types import SimpleNamespace
from typing import Any

import happybase
import pytest
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.planning.backfill_request import BackfillRequest, DataInterval
from airflow_provider_eo.ledger.protocol import AlreadyCommitted, EpochProtocol, Reserved
from airflow_provider_eo.operators.backfill_chunks import PlanBackfillOperator
from airflow_provider_eo.operators.backfill_request_form import request_of
from airflow_provider_eo.spark.driver.task_settings import task_settings
from airflow_provider_eo.spark.driver.write_epoch import ExitCode, write_epoch
from tests.conftest import StackInfo
from tests.faults.crash_points import listening
from tests.integration.epoch_round_trip import in_process_runner
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    conn_env_fixture,
    ledger_fixture,
    pipeline_fixture,
)
from tests.kafka_helpers import produce, recent_timestamp_ms
from tests.task_context import task_context

pytestmark = pytest.mark.integration

BACKFILL_DAG = "eo_backfill__p"
TimedTopic = tuple[str, datetime]
PipelineMaker = Callable[..., tuple[str, str, str]]
# partition 0: a0..a5 stamped t0 + 0, 10, 20, 30, 40, 50 s; partition 1: b0..b3 at t0 + 5, 25, 45, 65 s
P0_SECONDS = [0, 10, 20, 30, 40, 50]
P1_SECONDS = [5, 25, 45, 65]


@pytest.fixture
def timed_topic(stack: StackInfo, kafka_topic_factory: Callable[..., str]) -> tuple[str, datetime]:
    """A 2-partition topic holding the records above; returns (topic, t0)."""
    topic = kafka_topic_factory(partitions=2, prefix="bfi")
    t0 = recent_timestamp_ms(3600)
    for partition, prefix, seconds in ((0, "a", P0_SECONDS), (1, "b", P1_SECONDS)):
        records = [(f"{prefix}{i}", json.dumps({"v": i})) for i in range(len(seconds))]
        produce(
            stack.kafka_bootstrap,
            topic,
            records,
            partition=partition,
            timestamps=[t0 + 1000 * s for s in seconds],
        )
    return topic, datetime.fromtimestamp(t0 / 1000, UTC)


def backfill_run_context(run_id: str, start: datetime, end: datetime, **params: Any) -> dict[str, Any]:
    """The context of a task in a run Airflow's backfill created over ``[start, end)``."""
    context = task_context(run_id, dag_id=BACKFILL_DAG, params={"topics": [], "partitions": [], **params})
    context["dag_run"] = SimpleNamespace(
        run_type="backfill", data_interval_start=start, data_interval_end=end
    )
    return context


def plan(
    name: str, file: str, start: datetime, end: datetime, **params: Any
) -> list[list[tuple[int, int, int]]]:
    op = PlanBackfillOperator(task_id="plan", pipeline=name, pipelines_file=file)
    chunks = op.execute(backfill_run_context("bf-plan", start, end, **params))  # type: ignore[arg-type]
    return [[(r["partition"], r["start"], r["end"]) for r in chunk] for chunk in chunks]


def test_data_interval_plans_exact_offset_ranges(timed_topic: TimedTopic, pipeline: PipelineMaker) -> None:
    topic, t0 = timed_topic
    name, _, file = pipeline(topics=[topic])
    s = lambda seconds: t0 + timedelta(seconds=seconds)  # noqa: E731
    # bounds exactly on records' timestamps: a0+10 s is in, 40 s (p0) is out; p1: 25 s only
    assert plan(name, file, s(10), s(40)) == [[(0, 1, 4), (1, 1, 2)]]
    # a sub-millisecond past a record's timestamp excludes it
    assert plan(name, file, s(10) + timedelta(microseconds=1), s(40)) == [[(0, 2, 4), (1, 1, 2)]]
    # no record at or after the end: the high watermark
    assert plan(name, file, s(45), s(3600)) == [[(0, 5, 6), (1, 2, 4)]]
    # the form's partitions narrow the interval's ranges
    assert plan(name, file, s(10), s(40), partitions=[1]) == [[(1, 1, 2)]]
    # before every record, after every record: nothing to do
    for start, end in ((s(-60), s(0)), (s(70), s(130))):
        with pytest.raises(AirflowSkipException, match=f"pipeline '{name}': nothing to backfill"):
            plan(name, file, start, end)
    with pytest.raises(ValueError) as info:
        plan(name, file, s(0), s(10), start_offset=0)
    assert str(info.value) == (
        "backfill params ['start_offset']: a run over a data interval replays that interval; leave them empty"
    )


def test_chunked_plan_gives_ceil_n_over_k_epochs_with_exact_ranges(
    timed_topic: TimedTopic, pipeline: PipelineMaker
) -> None:
    topic, t0 = timed_topic
    name, _, file = pipeline(topics=[topic], backfill={"max_records_per_epoch": 3})
    # [t0, t0 + 70 s): p0 [0, 6), p1 [0, 4): 10 offsets -> 4 chunks of at most 3
    assert plan(name, file, t0, t0 + timedelta(seconds=70)) == [
        [(0, 0, 3)],
        [(0, 3, 6)],
        [(1, 0, 3)],
        [(1, 3, 4)],
    ]


# -- writing a backfill run chunk by chunk, as the DAG does (write_epoch: the Spark driver) ------
CRASH = {"at_write": 0, "writes": 0}


def crash_at_chosen_write(point: str) -> None:
    """Protocol-point handler: the write step dies after writing its HBase batches (before
    its vote) on the ``CRASH["at_write"]``-th write of the test."""
    if point == "spark.after_last_batch":
        CRASH["writes"] += 1
        if CRASH["writes"] == CRASH["at_write"]:
            raise RuntimeError("the write step died before its vote")


@pytest.fixture
def crash_handler() -> Iterator[dict[str, int]]:
    CRASH.update(at_write=0, writes=0)
    with listening(crash_at_chosen_write):
        yield CRASH


def run_chunks(
    stack: StackInfo, name: str, file: str, run: RunIdentity, request: BackfillRequest
) -> list[str]:
    """One attempt of a backfill run: plan, then per chunk reserve -> write -> commit (each
    chunk's outcome: written / already committed / crashed); finally release (the teardown)."""
    spec = load_pipeline(name, file)
    outcomes: list[str] = []
    with Ledger(stack.ledger_dsn) as ledger:
        protocol = EpochProtocol(ledger, kafka=EoKafkaHook)
        try:
            for chunk in protocol.plan_backfill(spec, request):
                outcome = protocol.reserve_backfill(spec, request_of([r.to_summary() for r in chunk]), run)
                if isinstance(outcome, AlreadyCommitted):
                    outcomes.append("already committed")
                    continue
                assert isinstance(outcome, Reserved)
                epoch = outcome.epoch
                code = write_epoch(
                    ledger, name, epoch.epoch_id, partial(task_settings, spec, epoch.epoch_id),
                    spec.spark.split_size, fencing_token=str(epoch.fencing_token), runner=in_process_runner,
                )  # fmt: skip
                assert code == ExitCode.OK
                protocol.commit(epoch.epoch_id, pipeline=spec)
                outcomes.append("written")
        except RuntimeError as exc:
            outcomes.append(f"crashed: {exc}")
        finally:
            protocol.release(spec, run)
    return outcomes


def hbase_rows(stack: StackInfo, table: str) -> dict[bytes, dict[bytes, bytes]]:
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        return dict(connection.table(table).scan())
    finally:
        connection.close()


def test_chunked_interval_backfill_writes_exactly_its_records_and_resumes_after_a_crash(
    stack: StackInfo,
    ledger: Ledger,
    timed_topic: TimedTopic,
    pipeline: PipelineMaker,
    crash_handler: dict[str, int],
) -> None:
    topic, t0 = timed_topic
    name, _, file = pipeline(topics=[topic], backfill={"max_records_per_epoch": 2})
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        connection.create_table(name, {"d": {}})
    finally:
        connection.close()
    run = RunIdentity(BACKFILL_DAG, "backfill__2026-03-01T00:00:00+00:00")
    # [t0 + 10 s, t0 + 50 s): a1..a4 (p0 [1, 5)) and b1, b2 (p1 [1, 3)): 6 offsets, 3 chunks
    request = DataInterval(t0 + timedelta(seconds=10), t0 + timedelta(seconds=50))

    crash_handler["at_write"] = 3
    assert run_chunks(stack, name, file, run, request) == [
        "written", "written", "crashed: the write step died before its vote",
    ]  # fmt: skip
    first = ledger.epochs(EpochFilter(pipeline=name))
    assert [(e.state.value, [(r.partition, r.start, r.end) for r in e.ranges]) for e in first] == [
        ("COMMITTED", [(0, 1, 3)]),
        ("COMMITTED", [(0, 3, 5)]),
        ("ABORTED", [(1, 1, 3)]),  # released by the run's teardown
    ]

    # the run is cleared and runs again: only the third chunk is written, as a new epoch
    assert run_chunks(stack, name, file, run, request) == [
        "already committed",
        "already committed",
        "written",
    ]
    second = ledger.epochs(EpochFilter(pipeline=name))
    assert second[:3] == [*first[:2], ledger.get_epoch(first[2].epoch_id)]  # chunks 1-2 untouched
    assert [(e.kind.value, e.state.value, e.dag_id, e.run_id) for e in second] == [
        ("backfill", state, run.dag_id, run.run_id)
        for state in ("COMMITTED", "COMMITTED", "ABORTED", "COMMITTED")
    ]
    assert [(r.partition, r.start, r.end) for r in second[3].ranges] == [(1, 1, 3)]
    assert [(e.metrics or {}).get("records") for e in second] == [2, 2, None, 2]

    # exactly the records stamped inside the interval, nothing else
    assert hbase_rows(stack, name) == {
        **{f"a{i}".encode(): {b"d:v": str(i).encode()} for i in (1, 2, 3, 4)},
        **{f"b{i}".encode(): {b"d:v": str(i).encode()} for i in (1, 2)},
    }
    assert EoKafkaHook().committed_offsets(f"g-{name}", [(topic, 0), (topic, 1)]) == {
        (topic, 0): None,
        (topic, 1): None,
    }  # backfills never publish offsets
