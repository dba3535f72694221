"""A nested JSON mapping through one real epoch: Kafka (two partitions) -> the write step
(the real driver and tasks, in-process) -> HBase, asserting the exact cells.

The pipeline selects and renames nested fields (``columns`` with dotted paths), flattens
an array, adds every Kafka metadata column, and builds its row key from a composite
template with a ``salt:8`` prefix. A record without the template's field is a dead
letter with its exact reason and offset.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import happybase
import psycopg2
import pytest

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
from tests.kafka_helpers import created_topic, produce, recent_timestamp_ms

pytestmark = pytest.mark.integration

MAPPING = {
    "row_key": "{customer.id}:{order_id}",
    "row_key_prefix": "salt:8",
    "columns": {
        "cid": "customer.id",
        "city": "customer.address.city",
        "items": "order.items",
        "attrs": "order.attrs",
        "total": "order.total",
        "note": "order.note",
    },
    "flatten": ["order.items"],
    "metadata_columns": {
        "topic": "_t",
        "partition": "_p",
        "offset": "_o",
        "timestamp": "_ts",
        "headers": "_h",
    },
}
HEADERS = [("trace", b"t-1"), ("bin", b"\xff\x00")]
HEADERS_CELL = b'[["trace","t-1"],["bin",{"base64":"/wA="}]]'
PARTITION_0: list[tuple[bytes, dict[str, Any]]] = [
    (
        b"o1",
        {
            "order_id": 1,
            "customer": {"id": 17, "address": {"city": "Zürich"}},
            "order": {
                "items": [{"sku": "a", "qty": 2}, "x"],
                "attrs": {"gift": True},
                "total": 12.5,
                "note": None,
            },
        },
    ),
    (b"o2", {"order_id": 2, "customer": {"id": 17}, "order": {"items": [], "total": 3}}),
    (b"o3", {"order_id": 3, "order": {"total": 1}}),  # no customer.id: a dead letter
]
PARTITION_1: list[tuple[bytes, dict[str, Any]]] = [
    (
        b"o4",
        {
            "order_id": 1,
            "customer": {"id": 18, "address": {"city": "Oslo"}},
            "order": {"items": ["z"], "attrs": {"a": [1, 2]}, "total": 0.1, "note": "door"},
        },
    ),
]


@dataclass
class World:
    topic: str
    table: str
    trip: EpochRoundTrip
    ledger_dsn: str
    timestamp_ms: int

    def dead_letters(self) -> list[tuple[Any, ...]]:
        with psycopg2.connect(self.ledger_dsn) as conn, conn.cursor() as cur:
            cur.execute(
                'SELECT topic, "partition", "offset", error, key FROM eo.dead_letters'
                ' WHERE pipeline = %s ORDER BY topic, "partition", "offset"',
                (self.table,),
            )
            return [(*r[:4], bytes(r[4])) for r in cur.fetchall()]


@pytest.fixture(scope="module")
def world(stack: StackInfo) -> Iterator[World]:
    table = f"mapping_{uuid.uuid4().hex[:8]}"
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(table, {"d": {}})
    stamp = recent_timestamp_ms()
    try:
        with (
            created_topic(stack.kafka_bootstrap, partitions=2, prefix="mapping") as topic,
            fresh_database(stack.ledger_dsn) as dsn,
        ):
            for partition, records in ((0, PARTITION_0), (1, PARTITION_1)):
                values = [(key, json.dumps(value).encode()) for key, value in records]
                produce(
                    stack.kafka_bootstrap,
                    topic,
                    values,
                    partition=partition,
                    headers=HEADERS,
                    timestamps=[stamp] * len(values),
                )
            spec = pipeline_spec(table, topic, table, mapping=MAPPING, bad_records="dead_letter")
            env = {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)}
            yield World(topic, table, EpochRoundTrip(spec, dsn, env), dsn, stamp)
    finally:
        hbase.delete_table(table, disable=True)
        hbase.close()


def metadata(world: World, partition: int, offset: int) -> dict[bytes, bytes]:
    return {
        b"d:_t": world.topic.encode(),
        b"d:_p": str(partition).encode(),
        b"d:_o": str(offset).encode(),
        b"d:_ts": str(world.timestamp_ms).encode(),
        b"d:_h": HEADERS_CELL,
    }


def test_nested_json_mapping_writes_exact_cells(stack: StackInfo, world: World) -> None:
    epoch = world.trip.run_stream_epoch()
    assert epoch is not None
    assert world.trip.epochs() == [
        EpochRow("stream", "COMMITTED", ((0, 0, 3), (1, 0, 1)), ((0, 3, 0), (1, 1, 0))),
    ]
    # salt:8 buckets: crc32(b"17:1") % 8 = 6, crc32(b"17:2") % 8 = 4, crc32(b"18:1") % 8 = 3
    expected: Rows = {
        b"617:1": {
            b"d:cid": b"17",
            b"d:city": "Zürich".encode(),
            b"d:items.0": b'{"sku":"a","qty":2}',
            b"d:items.1": b"x",
            b"d:attrs": b'{"gift":true}',
            b"d:total": b"12.5",
            b"d:note": b"null",
            **metadata(world, 0, 0),
        },
        b"417:2": {b"d:cid": b"17", b"d:total": b"3", **metadata(world, 0, 1)},
        b"318:1": {
            b"d:cid": b"18",
            b"d:city": b"Oslo",
            b"d:items.0": b"z",
            b"d:attrs": b'{"a":[1,2]}',
            b"d:total": b"0.1",
            b"d:note": b"door",
            **metadata(world, 1, 0),
        },
    }
    assert scan(stack, world.table) == expected
    assert world.dead_letters() == [
        (world.topic, 0, 2, "row key field 'customer.id' is missing or null", b"o3"),
    ]
