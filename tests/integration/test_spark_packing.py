"""Small ranges packed into shared Spark tasks, through spark-submit (local[2]) on the stack.

One epoch over 40 partitions of 3 records each (one partition holds a bad record more):
40 task ranges ride in 2 Spark tasks (the two slots), and every guarantee of one task per
range holds: exact cells at their offset versions per partition, the dead letter, the
per-partition read counts of the vote, and the vote itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import happybase
import psycopg2
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.ledger import EpochState, Ledger, PartitionRange
from eo_devtools.ledger_direct import reserve_backfill_epoch
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import ledger_connection
from tests.integration.ledger_support import fresh_database
from tests.integration.spark_submit import spark_env, submit_write
from tests.kafka_helpers import RecordSender

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 40
BAD_PARTITION = 7  # holds a fourth record, not JSON: dead-lettered


def records_of(p: int) -> list[tuple[str, bytes]]:
    """Partition ``p``'s records: row ``a`` twice (two versions), row ``b`` once."""
    rows = [(f"p{p}-a", b'{"v":0}'), (f"p{p}-a", b'{"v":1}'), (f"p{p}-b", b'{"v":2}')]
    return rows + ([(f"p{p}-c", b"oops")] if p == BAD_PARTITION else [])


@dataclass
class Packed:
    stack: StackInfo
    ledger_dsn: str
    topic: str
    table: str
    epoch_id: int
    returncode: int
    output: str


@pytest.fixture(scope="module")
def packed(stack: StackInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Packed]:
    suffix = uuid.uuid4().hex[:8]
    topic, table = f"pk-{suffix}", f"packed_{suffix}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)
    sender = RecordSender(stack.kafka_bootstrap)  # one producer for every partition
    for p in range(PARTITIONS):
        for key, value in records_of(p):
            sender.send(topic, key, value, partition=p)
    sender.flush()
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(table, {"d": {"max_versions": 5}})
    hbase.close()
    pipelines_file: Path = tmp_path_factory.mktemp("packing") / "pipelines.yaml"
    pipelines_file.write_text(
        "pipelines:\n"
        f"  - {{name: packed, topics: [{topic}], hbase: {{table: {table}}}, bad_records: dead_letter,"
        " batch_size: 1}\n"
    )
    with fresh_database(stack.ledger_dsn) as dsn:
        ranges = [PartitionRange(topic, p, 0, len(records_of(p))) for p in range(PARTITIONS)]
        with Ledger(dsn) as ledger:
            epoch_id = reserve_backfill_epoch(ledger, "packed", ranges, dag_id="t", run_id="r").epoch_id
        env = spark_env({**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)})
        result = submit_write(pipelines_file, "packed", epoch_id, env)
        yield Packed(stack, dsn, topic, table, epoch_id, result.returncode, result.output)
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.delete_table(table, disable=True)
    hbase.close()
    admin.delete_topics([topic])[topic].result(timeout=30)


def test_forty_small_ranges_ride_in_two_spark_tasks_with_every_guarantee(packed: Packed) -> None:
    assert packed.returncode == 0, packed.output[-4000:]
    assert f"epoch_id={packed.epoch_id}: voted WRITTEN records=121 cells=120 tombstones=0 bad=1 tasks=40 " \
        "spark_task_count=2 " in packed.output  # fmt: skip
    # every partition's versions are its own offsets (batch_size 1: a segment per record)
    hbase = happybase.Connection(packed.stack.hbase_host, packed.stack.hbase_port)
    try:
        table = hbase.table(packed.table)
        cells = {
            row: table.cells(row, b"d:v", versions=5, include_timestamp=True)
            for row, _ in table.scan(columns=[b"d:v"])
        }
    finally:
        hbase.close()
    assert cells == {
        **{f"p{p}-a".encode(): [(b"1", 1), (b"0", 0)] for p in range(PARTITIONS)},
        **{f"p{p}-b".encode(): [(b"2", 2)] for p in range(PARTITIONS)},
    }
    with Ledger(packed.ledger_dsn) as ledger:
        epoch = ledger.get_epoch(packed.epoch_id)
    metrics = epoch.metrics or {}
    assert (epoch.state, metrics["tasks"], metrics["spark_task_count"], metrics["records"]) == (
        EpochState.WRITTEN, PARTITIONS, 2, 3 * PARTITIONS + 1
    )  # fmt: skip
    assert metrics["partitions"] == [
        {
            "topic": packed.topic, "partition": p, "start": 0, "end": len(records_of(p)),
            "records": len(records_of(p)), "skipped_offsets": 0, "bad_records": int(p == BAD_PARTITION),
        }
        for p in range(PARTITIONS)
    ]  # fmt: skip
    with psycopg2.connect(packed.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute('SELECT topic, "partition", "offset", epoch_id, key, value FROM eo.dead_letters')
        dead = [(*r[:4], bytes(r[4]), bytes(r[5])) for r in cur.fetchall()]
    assert dead == [(packed.topic, BAD_PARTITION, 3, packed.epoch_id, b"p7-c", b"oops")]
