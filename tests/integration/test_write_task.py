"""The write task without Spark, against Apache Kafka, Apache HBase (Thrift1) and the ledger.

* cell versions against real HBase: random histories, random splits, batch
  sizes and replay orders; the visible state is always "last record wins";
* ``run_task``: exact HBase cells, exact metrics, dead letters, the fail policy;
* the Spark partition function: a task's error leaves it as data (``ExecutorTaskError``);
* the writer's clear error when HBase refuses the segment or the table does not exist.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import happybase
import psycopg2
import pytest

from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.ledger import Ledger, PartitionRange
from airflow_provider_eo.spark.hbase_sink.hbase_writer import (
    HBaseWriteError,
    SegmentWriter,
    UnwritableTableError,
)
from airflow_provider_eo.spark.hbase_sink.segments import Segment, build_segments
from airflow_provider_eo.spark.records import RowMutation, TaskRange
from airflow_provider_eo.spark.task.bad_records import BadRecordError
from airflow_provider_eo.spark.task.task_errors import ExecutorTaskError, TaskErrorData
from airflow_provider_eo.spark.task.task_pack import pack_partition_function
from airflow_provider_eo.spark.task.write_task import TaskSettings, run_task
from eo_devtools.ledger_direct import reserve_backfill_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import produce
from tests.unit.cell_version_model import expected_state, random_history, random_split

pytestmark = pytest.mark.integration


def _hbase_kwargs(stack: StackInfo) -> dict[str, Any]:
    return {"host": stack.hbase_host, "port": stack.hbase_port, "timeout": 30000}


@pytest.fixture
def table(stack: StackInfo) -> Iterator[str]:
    name = f"wt_{uuid.uuid4().hex[:10]}"
    conn = happybase.Connection(stack.hbase_host, stack.hbase_port)
    conn.create_table(name, {"cf": {"max_versions": 3}})
    yield name
    conn.delete_table(name, disable=True)
    conn.close()


@pytest.fixture
def ledger_dsn(stack: StackInfo) -> Iterator[str]:
    with fresh_database(stack.ledger_dsn) as dsn:
        yield dsn


@pytest.fixture
def epoch_id(ledger_dsn: str, topic: str) -> int:
    """A backfill epoch of pipeline ``wt`` over the topic (dead letters reference it)."""
    with Ledger(ledger_dsn) as ledger:
        epoch = reserve_backfill_epoch(ledger, "wt", [PartitionRange(topic, 0, 0, 8)], dag_id="d", run_id="r")
    return epoch.epoch_id


def scan(stack: StackInfo, table: str, prefix: bytes = b"") -> dict[bytes, dict[bytes, bytes]]:
    """Visible state of ``table`` (rows under ``prefix``, prefix stripped)."""
    conn = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        rows = conn.table(table).scan(row_prefix=prefix or None)
        return {row[len(prefix) :]: cells for row, cells in rows}
    finally:
        conn.close()


def _prefixed(mutation: RowMutation | None, prefix: bytes) -> RowMutation | None:
    return None if mutation is None else dataclasses.replace(mutation, row=prefix + mutation.row)


def test_cell_versions_against_real_hbase(stack: StackInfo, table: str) -> None:
    writer = SegmentWriter(_hbase_kwargs(stack), table)
    expected = {}
    for seed in range(40):
        rng = random.Random(seed)
        prefix = b"s%d-" % seed
        raw = random_history(rng, rng.randrange(1, 30), keys=rng.randrange(1, 4))
        history = [(offset, _prefixed(m, prefix)) for offset, m in raw]
        runs: list[list[Segment]] = []
        for _run in range(rng.randrange(1, 4)):
            runs += [
                list(build_segments(history[i:j], rng.randrange(1, 6), rng.choice((None, 1, 16, 48))))
                for i, j in random_split(rng, len(history))
            ]
        rng.shuffle(runs)  # replay order: old ranges after newer ones included
        for segments in runs:
            for segment in segments:
                writer.write(segment)
        expected[prefix] = expected_state(raw)
    writer.close()
    for prefix, state in expected.items():
        assert scan(stack, table, prefix) == state, f"seed prefix {prefix!r}"


def _settings(stack: StackInfo, table: str, ledger_dsn: str, **overrides: Any) -> TaskSettings:
    values: dict[str, Any] = {
        "pipeline": "wt",
        "epoch_id": 0,
        "hbase_table": table,
        "column_family": "cf",
        "mapping": MappingSpec(max_record_bytes=100),
        "bad_records": "dead_letter",
        "batch_size": 3,
        "batch_bytes": 4_194_304,
        "hbase_keyvalue_maxsize": 10_485_760,
        "read_timeout_s": 10.0,
        "kafka_config": {"bootstrap.servers": stack.kafka_bootstrap},
        "hbase_kwargs": _hbase_kwargs(stack),
        "ledger_dsn": ledger_dsn,
    }
    values.update(overrides)
    return TaskSettings(**values)


RECORDS: list[tuple[str | None, bytes | None]] = [
    ("u1", b'{"name":"ann","age":30}'),  # 0
    ("u2", b'{"name":"bob"}'),  # 1
    ("u1", b'{"age":31}'),  # 2
    ("u3", b"not json"),  # 3 bad
    ("u2", None),  # 4 tombstone
    ("u3", b'{"big":"' + b"x" * 200 + b'"}'),  # 5 bad: too large
    ("u2", b'{"name":"bob2"}'),  # 6 put after delete (next segment anyway)
    (None, b'{"name":"nokey"}'),  # 7 bad: no key
]


@pytest.fixture
def topic(stack: StackInfo, kafka_topic_factory: Callable[..., str]) -> str:
    name = kafka_topic_factory(partitions=1, prefix="wt")
    produce(stack.kafka_bootstrap, name, RECORDS, partition=0, headers=[("trace", b"t-1")])
    return name


def test_run_task_writes_exact_cells_metrics_and_dead_letters(
    stack: StackInfo, table: str, topic: str, ledger_dsn: str, epoch_id: int
) -> None:
    settings = _settings(stack, table, ledger_dsn, epoch_id=epoch_id)
    first = run_task(settings, TaskRange(topic, 0, 0, 4))
    second = run_task(settings, TaskRange(topic, 0, 4, 8))
    again = run_task(settings, TaskRange(topic, 0, 0, 8))  # a replay with another split
    assert scan(stack, table) == {
        b"u1": {b"cf:name": b"ann", b"cf:age": b"31"},
        b"u2": {b"cf:name": b"bob2"},
    }
    counts = [
        (m.records, m.cells_written, m.tombstones, m.bad_records, m.segments) for m in (first, second, again)
    ]
    assert counts == [(4, 3, 0, 1, 1), (4, 1, 1, 2, 2), (8, 4, 1, 3, 3)]
    assert first.bytes == sum(len(k or "") + len(v or b"") for k, v in RECORDS[:4])
    with psycopg2.connect(ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            'SELECT pipeline, topic, "partition", "offset", epoch_id, error, key, value, headers'
            ' FROM eo.dead_letters ORDER BY "offset"'
        )
        rows = [
            (*row[:6], bytes(row[6]) if row[6] is not None else None, bytes(row[7]), row[8]) for row in cur
        ]
    headers = [["trace", "dC0x"]]  # base64 of b"t-1"
    assert [row[:5] for row in rows] == [("wt", topic, 0, o, epoch_id) for o in (3, 5, 7)]
    assert [row[5].split(":")[0] for row in rows] == [
        "value is not valid JSON",
        "record is 212 bytes, larger than max_record_bytes=100",
        "record has no Kafka key, needed for the row key",
    ]
    assert [(row[6], row[7], row[8]) for row in rows] == [
        (b"u3", RECORDS[3][1], headers),
        (b"u3", RECORDS[5][1], headers),
        (None, RECORDS[7][1], headers),
    ]


def test_fail_policy_names_topic_partition_offset_and_writes_nothing_after(
    stack: StackInfo, table: str, topic: str, ledger_dsn: str
) -> None:
    settings = _settings(stack, table, ledger_dsn, bad_records="fail", batch_size=10, epoch_id=41)
    with pytest.raises(BadRecordError) as info:
        run_task(settings, TaskRange(topic, 0, 0, 8))
    assert str(info.value).startswith(
        f"bad record in pipeline 'wt' epoch 41 at topic {topic} partition 0 offset 3: value is not valid JSON"
    )
    assert scan(stack, table) == {}  # the open segment (offsets 0..2) was never sent


def test_partition_function_raises_the_tasks_error_as_data(
    stack: StackInfo, table: str, topic: str, ledger_dsn: str
) -> None:
    run_partition = pack_partition_function(
        _settings(stack, table, ledger_dsn, bad_records="fail", batch_size=10, epoch_id=41)
    )
    with pytest.raises(ExecutorTaskError) as info:
        list(run_partition([(TaskRange(topic, 0, 1, 8),)]))
    cause = info.value.__cause__  # the executor's log keeps the original traceback
    assert isinstance(cause, BadRecordError)
    where = f"topic {topic} partition 0 offset 3"
    assert str(cause).startswith(f"bad record in pipeline 'wt' epoch 41 at {where}: value is not valid JSON")
    data = TaskErrorData("BadRecordError", str(cause), "wt", 41, topic, 0, 1, 8)
    assert (info.value.data, str(info.value), TaskErrorData.find(f"Job aborted\n{info.value}")) == (
        data, data.marker_line(), data
    )  # fmt: skip
    assert scan(stack, table) == {}


def test_writer_refuses_a_missing_table_at_once(stack: StackInfo, caplog: pytest.LogCaptureFixture) -> None:
    writer = SegmentWriter(_hbase_kwargs(stack), "no_such_table", attempts=2, backoff_s=0, connection_id="hb")
    segment = Segment(5, 9, 5, puts={b"r": {b"cf:a": b"1"}})
    logger = "airflow_provider_eo.spark.hbase_sink.hbase_writer"
    with caplog.at_level(logging.WARNING, logger=logger), pytest.raises(UnwritableTableError) as info:
        writer.write(segment)
    writer.close()
    assert str(info.value) == (
        "cannot write to HBase table 'no_such_table': the table does not exist (connection 'hb', Thrift "
        f"server {stack.hbase_host}:{stack.hbase_port}); create it, then retry"
    )
    assert [r.getMessage() for r in caplog.records] == []  # not a single retry


def test_writer_does_not_retry_what_no_retry_can_cure(
    stack: StackInfo, table: str, caplog: pytest.LogCaptureFixture
) -> None:
    writer = SegmentWriter(_hbase_kwargs(stack), table, attempts=3, backoff_s=0)
    segment = Segment(1, 1, 1, puts={b"r" * 40_000: {b"cf:a": b"1"}})  # HBase refuses rows over 32,767 bytes
    logger = "airflow_provider_eo.spark.hbase_sink.hbase_writer"
    with caplog.at_level(logging.WARNING, logger=logger), pytest.raises(HBaseWriteError) as info:
        writer.write(segment)
    writer.close()
    assert str(info.value).startswith(
        f"cannot write to HBase table {table!r}: segment of offsets [1, 1] (version 1) failed and is not "
        "retried: TApplicationException: "
    )
    assert type(info.value.__cause__).__name__ == "TApplicationException"  # HBase's IllegalArgumentException
    assert [r.getMessage() for r in caplog.records] == []  # not a single retry
    assert scan(stack, table) == {}
