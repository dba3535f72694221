"""Tombstones, a major compaction, then a backfill of an old range, on real HBase.

Two pipelines read the same topic (updates and tombstones of three rows) into two
tables that differ only in ``KEEP_DELETED_CELLS`` (created through HBase's Java Admin
API: Thrift1 cannot set it). Both run the same stream epochs, then both tables are
flushed and major-compacted (bounded wait), then both replay the old range [0, 3) as a
backfill epoch. Measured and asserted:

* ``KEEP_DELETED_CELLS => 'TRUE'``: the compaction keeps the delete markers; the replay
  changes nothing visible;
* without it (HBase's default, FALSE): the compaction purges the markers and every cell
  they masked; the replay brings back the deleted row u1 whole, and the column ``city``
  of u2, deleted by the tombstone and never set again (u2's ``name`` stays at its newer
  version). A row's newer cells always win: only masked-and-purged cells come back.

The write step warns once per epoch that wrote tombstones (Thrift1 cannot show the setting).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import happybase
import pytest

from airflow_provider_eo.ledger import PartitionRange
from eo_devtools.stack.hbase_admin import HBaseTableTool, RawCell
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import (
    EpochRoundTrip,
    EpochRow,
    Rows,
    ledger_connection,
    pipeline_spec,
    scan,
)
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import created_topic, produce

pytestmark = pytest.mark.integration

RECORDS: list[tuple[str, bytes | None]] = [
    ("u1", b'{"name":"ann","age":30}'),  # 0
    ("u2", b'{"name":"bob","city":"x"}'),  # 1
    ("u3", b'{"name":"cy"}'),  # 2
    ("u1", None),  # 3 tombstone
    ("u2", None),  # 4 tombstone
    ("u2", b'{"name":"bob2"}'),  # 5
    ("u3", b'{"age":7}'),  # 6
]
# batch_size 2, epochs [0,4) and [4,7): versions 1 (u1, u2), 3 (u3; u1 deleted), 4 (u2 deleted), 6 (u2, u3)
LATEST: Rows = {
    b"u2": {b"d:name": b"bob2"},
    b"u3": {b"d:name": b"cy", b"d:age": b"7"},
}
RESURRECTED: Rows = {
    b"u1": {b"d:name": b"ann", b"d:age": b"30"},
    b"u2": {b"d:name": b"bob2", b"d:city": b"x"},
    b"u3": {b"d:name": b"cy", b"d:age": b"7"},
}
STREAM_EPOCHS = [
    EpochRow("stream", "COMMITTED", ((0, 0, 4),), ((0, 4, 0),)),
    EpochRow("stream", "COMMITTED", ((0, 4, 7),), ((0, 3, 0),)),
]


@dataclass
class Pipeline:
    table: str
    trip: EpochRoundTrip


def markers(cells: list[RawCell]) -> list[tuple[str, int]]:
    """(row, version) of the family delete markers of a raw scan."""
    return [(c.row, c.timestamp) for c in cells if c.kind == "DeleteFamily"]


def cells_kept(cells: list[RawCell]) -> set[tuple[str, str, int, str]]:
    """(row, column, version, value) of the values of a raw scan."""
    return {(c.row, c.column, c.timestamp, c.value) for c in cells if c.kind == "Put"}


@pytest.fixture(scope="module")
def tool(stack: StackInfo) -> HBaseTableTool:
    return HBaseTableTool(stack.state_dir)


@pytest.fixture(scope="module")
def pipelines(stack: StackInfo, tool: HBaseTableTool) -> Iterator[dict[bool, Pipeline]]:
    """keep_deleted_cells -> the pipeline writing a table with that setting."""
    suffix = uuid.uuid4().hex[:8]
    tables = {keep: f"tomb_{'kdc' if keep else 'default'}_{suffix}" for keep in (True, False)}
    for keep, table in tables.items():
        tool.create(table, "d", keep_deleted_cells=keep)
    with (
        created_topic(stack.kafka_bootstrap, prefix="tomb") as topic,
        fresh_database(stack.ledger_dsn) as dsn,
    ):
        produce(stack.kafka_bootstrap, topic, RECORDS, partition=0)
        env = {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)}
        yield {
            keep: Pipeline(
                table,
                EpochRoundTrip(
                    pipeline_spec(table, topic, table, batch_size=2, caps={"max_records_per_partition": 4}),
                    dsn,
                    env,
                ),
            )
            for keep, table in tables.items()
        }
    # a connection of its own: the Thrift server closes one left idle through the test
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    for table in tables.values():
        hbase.delete_table(table, disable=True)
    hbase.close()


def test_replay_after_major_compaction_with_and_without_keep_deleted_cells(
    stack: StackInfo, tool: HBaseTableTool, pipelines: dict[bool, Pipeline], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="airflow_provider_eo.spark.driver.write_epoch"):
        for pipeline in pipelines.values():
            assert [pipeline.trip.run_stream_epoch() is None for _ in range(3)] == [False, False, True]
            assert scan(stack, pipeline.table) == LATEST
    warnings = [r.getMessage() for r in caplog.records if "tombstone(s)" in r.getMessage()]
    assert [w.split(": ", 1)[1].split(";")[0] for w in warnings] == [
        f"wrote 1 tombstone(s) (family deletes) to HBase table {p.table!r} family 'd'"
        for p in pipelines.values()
        for _epoch in (1, 2)
    ]

    for pipeline in pipelines.values():
        tool.major_compact(pipeline.table)
    kept, purged = (tool.raw_scan(pipelines[keep].table) for keep in (True, False))
    assert markers(kept) == [("u1", 3), ("u2", 4)]
    assert markers(purged) == []
    assert cells_kept(purged) == {
        ("u2", "d:name", 6, "bob2"),
        ("u3", "d:age", 6, "7"),
        ("u3", "d:name", 3, "cy"),
    }
    assert scan(stack, pipelines[True].table) == scan(stack, pipelines[False].table) == LATEST

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="airflow_provider_eo.spark.driver.write_epoch"):
        for pipeline in pipelines.values():
            trip = pipeline.trip
            backfill = trip.reserve_backfill([PartitionRange(trip.spec.topics[0], 0, 0, 3)])
            trip.write_and_commit(backfill)
            assert trip.epochs() == [
                *STREAM_EPOCHS,
                EpochRow("backfill", "COMMITTED", ((0, 0, 3),), ((0, 3, 0),)),
            ]
            assert trip.group_offsets() == {0: 7}  # a backfill never moves the group
    assert [r for r in caplog.records if "tombstone(s)" in r.getMessage()] == []

    assert scan(stack, pipelines[True].table) == LATEST
    assert scan(stack, pipelines[False].table) == RESURRECTED
