"""The write application through spark-submit (local[2]) on the local stack.

Module-scoped: one fresh ledger database, two topics, three HBase tables. Runs:
a dead-letter pipeline over 3 partitions split into 9 tasks (exact HBase cells,
exact vote metrics, exact dead letters, WRITTEN); a fail-policy pipeline (not
voted, the error names topic/partition/offset); two fenced-out runs that stop
before Spark starts (epoch aborted; fencing token rotated) and change nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import happybase
import psycopg2
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.ledger import EpochState, Ledger, PartitionRange
from eo_devtools.ledger_direct import reserve_backfill_epoch, rotate_fencing_token
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import ledger_connection
from tests.integration.ledger_support import fresh_database
from tests.integration.spark_submit import SubmitResult, spark_env, submit_write
from tests.kafka_helpers import produce

pytestmark = [pytest.mark.integration, pytest.mark.spark]

Rec = tuple[str | None, bytes | None]


def partition_records(p: int) -> list[Rec]:
    """10 records of partition ``p``: updates, a tombstone, bad records (offsets 3 and 8)."""
    k = [f"p{p}-k{i}" for i in range(3)]
    return [
        (k[0], b'{"v":0,"s":"a"}'),
        (k[1], b'{"v":1}'),
        (k[0], b'{"v":2,"o":{"x":[1]}}'),
        (k[2], b"oops"),  # bad: not JSON
        (k[1], None),  # tombstone
        (k[0], b'{"s":"b"}'),
        (k[1], b'{"v":6,"t":true}'),
        (k[2], b'{"v":7}'),
        (None, b'{"v":8}'),  # bad: no key
        (k[2], b'{"v":9,"n":null}'),
    ]


EXPECTED_ROWS = {
    **{f"p{p}-k0".encode(): {b"d:v": b"2", b"d:s": b"b", b"d:o": b'{"x":[1]}'} for p in range(3)},
    **{f"p{p}-k1".encode(): {b"d:v": b"6", b"d:t": b"true"} for p in range(3)},
    **{f"p{p}-k2".encode(): {b"d:v": b"9", b"d:n": b"null"} for p in range(3)},
}


@dataclass
class World:
    stack: StackInfo
    ledger_dsn: str
    env: dict[str, str]
    pipelines_file: Path
    topic: str
    fail_topic: str
    tables: dict[str, str]

    def run(self, pipeline: str, epoch_id: int, *extra: str) -> SubmitResult:
        """spark-submit the application."""
        return submit_write(self.pipelines_file, pipeline, epoch_id, self.env, *extra)

    def scan(self, pipeline: str) -> dict[bytes, dict[bytes, bytes]]:
        conn = happybase.Connection(self.stack.hbase_host, self.stack.hbase_port)
        try:
            return dict(conn.table(self.tables[pipeline]).scan())
        finally:
            conn.close()

    def reserve(self, pipeline: str, topic: str, partitions: int, end: int) -> int:
        with Ledger(self.ledger_dsn) as ledger:
            ranges = [PartitionRange(topic, p, 0, end) for p in range(partitions)]
            return reserve_backfill_epoch(
                ledger, pipeline, ranges, dag_id="t", run_id=uuid.uuid4().hex
            ).epoch_id

    def history(self, epoch_id: int) -> list[tuple[Any, ...]]:
        """``(from, to, actor_kind, actor, reason)`` of the epoch's history rows, oldest first."""
        with psycopg2.connect(self.ledger_dsn) as conn, conn.cursor() as cur:
            cur.execute(
                "SELECT from_state, to_state, actor_kind, actor, reason FROM eo.epoch_transitions"
                " WHERE epoch_id = %s ORDER BY transition_id",
                (epoch_id,),
            )
            return list(cur.fetchall())

    def dead_letters(self, pipeline: str) -> list[tuple[Any, ...]]:
        with psycopg2.connect(self.ledger_dsn) as conn, conn.cursor() as cur:
            cur.execute(
                'SELECT topic, "partition", "offset", epoch_id, error, key, value FROM eo.dead_letters'
                ' WHERE pipeline = %s ORDER BY topic, "partition", "offset"',
                (pipeline,),
            )
            return [(*r[:5], None if r[5] is None else bytes(r[5]), bytes(r[6])) for r in cur.fetchall()]


@pytest.fixture(scope="module")
def world(stack: StackInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    suffix = uuid.uuid4().hex[:8]
    topic, fail_topic = f"sa-{suffix}", f"sf-{suffix}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    for future in admin.create_topics([NewTopic(topic, 3, 1), NewTopic(fail_topic, 1, 1)]).values():
        future.result(timeout=15)
    for p in range(3):
        produce(stack.kafka_bootstrap, topic, partition_records(p), partition=p)
    produce(
        stack.kafka_bootstrap, fail_topic, [("a", b'{"v":1}'), ("b", b'{"v":2}'), ("c", b"{bad")], partition=0
    )
    tables = {name: f"{name}_{suffix}" for name in ("spark_dl", "spark_fail", "spark_fenced")}
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    for table in tables.values():
        hbase.create_table(table, {"d": {"max_versions": 3}})
    hbase.close()
    pipelines_file = tmp_path_factory.mktemp("spark-app") / "pipelines.yaml"
    pipelines_file.write_text(
        "pipelines:\n"
        f"  - {{name: spark_dl, topics: [{topic}], hbase: {{table: {tables['spark_dl']}}},"
        " bad_records: dead_letter, batch_size: 3, spark: {split_size: 4}}\n"
        f"  - {{name: spark_fail, topics: [{fail_topic}], hbase: {{table: {tables['spark_fail']}}}}}\n"
        f"  - {{name: spark_fenced, topics: [{topic}], hbase: {{table: {tables['spark_fenced']}}}}}\n"
    )
    with fresh_database(stack.ledger_dsn) as dsn:
        env = spark_env({**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)})
        yield World(stack, dsn, env, pipelines_file, topic, fail_topic, tables)
    # a new connection: HBase's Thrift server closes one idle for 60 s, and the module's
    # spark-submits may take longer than that on a loaded machine
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    for table in tables.values():
        hbase.delete_table(table, disable=True)
    hbase.close()
    for future in admin.delete_topics([topic, fail_topic]).values():
        future.result(timeout=15)


NOT_JSON = "value is not valid JSON: Expecting value: line 1 column 1 (char 0)"
NO_KEY = "record has no Kafka key, needed for the row key"


def test_epoch_over_three_partitions_in_nine_tasks_is_written_and_voted(world: World) -> None:
    epoch_id = world.reserve("spark_dl", world.topic, 3, 10)
    writer = "eo_stream__spark_dl/manual__1/write try 3"  # as WriteEpochOperator passes it
    result = world.run("spark_dl", epoch_id, "--actor-kind", "task", "--actor", writer)
    assert result.returncode == 0, result.output[-4000:]
    # the vote is recorded once, as the write task (the driver's own transaction)
    assert world.history(epoch_id)[1:] == [
        ("RESERVED", "WRITTEN", "task", writer, "voted WRITTEN by its writer")
    ]
    assert parse_dsn(world.ledger_dsn)["password"] not in result.output
    assert (
        f"epoch_id={epoch_id}: voted WRITTEN records=30 cells=30 tombstones=3 bad=6 tasks=9" in result.output
    )
    assert world.scan("spark_dl") == EXPECTED_ROWS
    with Ledger(world.ledger_dsn) as ledger:
        epoch = ledger.get_epoch(epoch_id)
    assert epoch.state == EpochState.WRITTEN
    metrics = dict(epoch.metrics or {})
    assert isinstance(metrics.pop("duration_s"), float)
    # the Spark job's length and its end to the vote (ledger/model/phases.py places them)
    assert isinstance(metrics.pop("spark_tasks_s"), float) and isinstance(
        metrics.pop("vote_after_tasks_s"), float
    )
    value_bytes = sum(len(k or "") + len(v or b"") for k, v in partition_records(0))
    assert metrics == {
        "records": 30,
        "skipped_offsets": 0,
        "cells_written": 3 * 10,  # per partition, tasks [0,3) [3,6) [6,10): segments 4 + 1 + 3 + 2 cells
        "tombstones": 3,
        "changes_skipped": 0,
        "bad_records": 6,
        "bytes": 3 * value_bytes,
        "segments": 3 * 4,
        "schema_fetches": 0,
        "schema_ids": [],
        "tasks": 9,
        "spark_task_count": 8,  # 30 offsets / split_size 4: the 9 ranges packed into 8 Spark tasks
        "partitions": [
            {
                "topic": world.topic,
                "partition": p,
                "start": 0,
                "end": 10,
                "records": 10,
                "skipped_offsets": 0,
                "bad_records": 2,
            }
            for p in range(3)
        ],
    }
    assert world.dead_letters("spark_dl") == [
        row
        for p in range(3)
        for row in (
            (world.topic, p, 3, epoch_id, NOT_JSON, f"p{p}-k2".encode(), b"oops"),
            (world.topic, p, 8, epoch_id, NO_KEY, None, b'{"v":8}'),
        )
    ]  # fmt: skip


def test_fail_policy_fails_the_epoch_naming_topic_partition_offset(world: World) -> None:
    epoch_id = world.reserve("spark_fail", world.fail_topic, 1, 3)
    result = world.run("spark_fail", epoch_id)
    assert result.returncode == 4, result.output[-4000:]
    failed = [line.split(" ERROR ", 1)[1] for line in result.output.splitlines() if "task failed" in line]
    assert failed == [
        f"airflow_provider_eo.spark.driver.write_epoch pipeline=spark_fail epoch_id={epoch_id}: "
        "task failed, epoch not voted: "
        f"BadRecordError: bad record in pipeline 'spark_fail' epoch {epoch_id} at topic {world.fail_topic} "
        "partition 0 offset 2: value is not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)"
    ]
    with Ledger(world.ledger_dsn) as ledger:
        epoch = ledger.get_epoch(epoch_id)
    assert (epoch.state, epoch.metrics, epoch.written_at) == (EpochState.RESERVED, None, None)
    assert world.dead_letters("spark_fail") == []
    assert world.scan("spark_fail") == {}


def test_aborted_epoch_is_fenced_out_and_nothing_changes(world: World) -> None:
    epoch_id = world.reserve("spark_fenced", world.topic, 3, 10)
    with Ledger(world.ledger_dsn) as ledger:
        before = ledger.abort(epoch_id, "test: aborted before the run")
    result = world.run("spark_fenced", epoch_id)
    assert result.returncode == 3, result.output[-4000:]
    assert f"epoch_id={epoch_id}: epoch is ABORTED, not RESERVED: nothing written, not voted" in result.output
    with Ledger(world.ledger_dsn) as ledger:
        assert ledger.get_epoch(epoch_id) == before
    assert world.scan("spark_fenced") == {}
    assert world.dead_letters("spark_fenced") == []


def test_rotated_fencing_token_is_fenced_out_and_nothing_changes(world: World) -> None:
    epoch_id = world.reserve("spark_fenced", world.topic, 3, 10)
    with Ledger(world.ledger_dsn) as ledger:
        issued = ledger.get_epoch(epoch_id).fencing_token
        rotate_fencing_token(ledger, epoch_id)
        before = ledger.get_epoch(epoch_id)
    result = world.run("spark_fenced", epoch_id, "--fencing-token", issued)
    assert result.returncode == 3, result.output[-4000:]
    assert "fencing token does not match the epoch's: nothing written, not voted" in result.output
    assert issued not in result.output
    with Ledger(world.ledger_dsn) as ledger:
        assert ledger.get_epoch(epoch_id) == before
    assert before.state == EpochState.RESERVED
    assert world.scan("spark_fenced") == {}
