"""A table HBase cannot take writes for: refused at once by the writer, naming it (issue 34).

A disabled table (tables are disabled in production for schema changes) used to hold every
write attempt until the Thrift socket timed out, and the error never named the cause. The
writer now checks the table on each new connection (Thrift1 ``isTableEnabled``, then
``getTableNames`` for a missing table): a disabled table, a missing table and a missing
namespace fail the write step at once with ``UnwritableTableError`` naming it, nothing
written, the epoch left RESERVED (recovery aborts it). Whole epochs in-process
(``epoch_round_trip.py``: the real driver and tasks without Spark) against the stack's
Kafka, HBase and a fresh ledger; "at once" is asserted as one attempt (no retry warning).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator

import happybase
import pytest

from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from airflow_provider_eo.spark.hbase_sink.hbase_writer import SegmentWriter, UnwritableTableError
from airflow_provider_eo.spark.hbase_sink.segments import Segment
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import (
    EpochRoundTrip,
    EpochRow,
    failing_as_in_spark,
    ledger_connection,
    pipeline_spec,
    scan,
)
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import produce

pytestmark = pytest.mark.integration

RECORDS = 20
WRITER_LOG = "airflow_provider_eo.spark.hbase_sink.hbase_writer"  # one warning per failed attempt
DRIVER_LOG = "airflow_provider_eo.spark.driver.write_epoch"


@pytest.fixture(scope="module")
def ledger_dsn(stack: StackInfo) -> Iterator[str]:
    with fresh_database(stack.ledger_dsn) as dsn:
        yield dsn


@pytest.fixture
def hbase(stack: StackInfo) -> Iterator[happybase.Connection]:
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    yield connection
    connection.close()


@pytest.fixture
def table(hbase: happybase.Connection) -> Iterator[str]:
    """A new table with family ``d``, deleted afterwards (enabled or not)."""
    name = f"unwritable_{uuid.uuid4().hex[:8]}"
    hbase.create_table(name, {"d": {}})
    yield name
    if hbase.is_table_enabled(name):
        hbase.disable_table(name)
    hbase.delete_table(name)


@pytest.fixture
def topic(stack: StackInfo, kafka_topic_factory: Callable[..., str]) -> str:
    name: str = kafka_topic_factory(partitions=1, prefix="unwritable")
    records = [(f"k{i}", json.dumps({"n": i})) for i in range(RECORDS)]
    produce(stack.kafka_bootstrap, name, records, partition=0)
    return name


def round_trip(stack: StackInfo, ledger_dsn: str, topic: str, table: str) -> EpochRoundTrip:
    pipeline = f"p_{uuid.uuid4().hex[:8]}"
    spec = pipeline_spec(pipeline, topic, table, batch_size=5)
    env = {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(ledger_dsn)}
    return EpochRoundTrip(spec, ledger_dsn, env)


def refused_write(trip: EpochRoundTrip, caplog: pytest.LogCaptureFixture) -> tuple[list[str], list[str]]:
    """Reserve an epoch and write it, expecting the refusal: (the writer's retry warnings,
    the driver's error lines)."""
    epoch = trip.reserve()
    assert epoch is not None
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert trip.write(epoch.epoch_id, failing_as_in_spark) == ExitCode.TASK_FAILED
    retries = [r.getMessage() for r in caplog.records if r.name == WRITER_LOG]
    errors = [r.getMessage() for r in caplog.records if r.name == DRIVER_LOG and r.levelno == logging.ERROR]
    return retries, [e.replace(f"epoch_id={epoch.epoch_id}", "epoch_id=E") for e in errors]


RESERVED = EpochRow("stream", "RESERVED", ((0, 0, RECORDS),), ())


def test_a_disabled_table_is_refused_at_once_and_the_next_run_commits_exactly(
    stack: StackInfo,
    ledger_dsn: str,
    topic: str,
    hbase: happybase.Connection,
    table: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    trip = round_trip(stack, ledger_dsn, topic, table)
    hbase.client.disableTable(table.encode())
    try:
        retries, errors = refused_write(trip, caplog)
    finally:
        hbase.client.enableTable(table.encode())
    where = f"connection 'eo_hbase', Thrift server {stack.hbase_host}:{stack.hbase_port}"
    assert (retries, errors) == (
        [],  # one attempt: no retry, no timeout
        [
            f"pipeline={trip.spec.name} epoch_id=E: task failed, epoch not voted: UnwritableTableError: "
            f"cannot write to HBase table {table!r}: the table is disabled ({where}); enable it "
            f"(HBase shell: enable '{table}'), then retry"
        ],
    )
    assert (trip.epochs(), trip.group_offsets(), scan(stack, table)) == ([RESERVED], {0: None}, {})

    trip.recover()  # the next run, the table enabled again: its recovery aborts the epoch
    assert trip.run_stream_epoch() is not None
    assert trip.epochs() == [
        EpochRow("stream", "ABORTED", ((0, 0, RECORDS),), ()),
        EpochRow("stream", "COMMITTED", ((0, 0, RECORDS),), ((0, RECORDS, 0),)),
    ]
    assert trip.group_offsets() == {0: RECORDS}
    assert scan(stack, table) == {f"k{i}".encode(): {b"d:n": str(i).encode()} for i in range(RECORDS)}


def test_a_missing_namespace_is_refused_at_once_naming_it(
    stack: StackInfo, ledger_dsn: str, topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    namespace = f"nons_{uuid.uuid4().hex[:8]}"
    trip = round_trip(stack, ledger_dsn, topic, f"{namespace}:events")
    retries, errors = refused_write(trip, caplog)
    where = f"connection 'eo_hbase', Thrift server {stack.hbase_host}:{stack.hbase_port}"
    assert (retries, errors) == (
        [],
        [
            f"pipeline={trip.spec.name} epoch_id=E: task failed, epoch not voted: UnwritableTableError: "
            f"cannot write to HBase table '{namespace}:events': its namespace {namespace!r} does not exist, "
            f"or holds no table ({where}); create the namespace (HBase shell: create_namespace "
            f"'{namespace}') and the table, then retry"
        ],
    )
    assert (trip.epochs(), trip.group_offsets()) == ([RESERVED], {0: None})


def test_a_table_disabled_mid_write_is_refused_at_the_next_attempt(
    stack: StackInfo, hbase: happybase.Connection, table: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The write to a table disabled after the check hangs until the socket times out (2 s
    here); the reconnect checks the table again and refuses: one retry, not four. The table
    stays disabled until it is deleted: the Thrift server may still hold the timed-out call."""
    kwargs = {"host": stack.hbase_host, "port": stack.hbase_port, "timeout": 2000}
    writer = SegmentWriter(kwargs, table, backoff_s=0)
    try:
        writer.write(Segment(0, 1, 1, puts={b"a": {b"d:n": b"1"}}))
        hbase.client.disableTable(table.encode())
        with caplog.at_level(logging.WARNING, logger=WRITER_LOG), pytest.raises(UnwritableTableError) as info:
            writer.write(Segment(2, 3, 3, puts={b"b": {b"d:n": b"3"}}))
    finally:
        writer.close()
    server = f"{stack.hbase_host}:{stack.hbase_port}"
    assert [r.getMessage() for r in caplog.records] == [
        f"HBase write failed table={table} offsets=[2,3] version 3 attempt=1/4 reconnect={server}: "
        "TimeoutError"
    ]
    assert str(info.value) == (
        f"cannot write to HBase table {table!r}: the table is disabled (Thrift server {server}); enable it "
        f"(HBase shell: enable '{table}'), then retry"
    )
