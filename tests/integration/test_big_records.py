"""Big records on the local stack with its default heaps: every HBase write is bounded by bytes.

* 400 JSON records of about 900 KB in one partition, default pipeline settings: the real
  write step (spark-submit) writes one epoch, commit publishes it; HBase is exact, every
  segment stays within ``batch_bytes``, and the Thrift server logs no OutOfMemoryError;
* small and near-limit records interleaved over 3 partitions and several tasks, with
  tombstones among the big ones: HBase is exact; a backfill replay of the same ranges
  leaves every cell byte-identical, versions included;
* a record batch larger than the Kafka connection's ``receive.message.max.bytes``: the write
  fails at once with an error naming topic, partition and offset.
"""

from __future__ import annotations

import dataclasses
import json
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import happybase
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.config.specs import DEFAULT_BATCH_BYTES
from airflow_provider_eo.ledger import PartitionRange
from airflow_provider_eo.spark.task.range_reader import RangeReadError
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import (
    EpochRoundTrip,
    EpochRow,
    kafka_connection,
    ledger_connection,
    pipeline_spec,
)
from tests.integration.ledger_support import fresh_database
from tests.integration.spark_submit import spark_env, submit_write
from tests.kafka_helpers import RecordSender

pytestmark = pytest.mark.integration

#: Near the default ``max_record_bytes`` (1 MiB) and within the broker's default message.max.bytes.
NEAR_LIMIT = 1_040_000
BROKER_MESSAGE_MAX_BYTES = 1_048_588
Cells = dict[bytes, bytes]


def payload(seed: int, size: int) -> str:
    """``size`` characters of hex that lz4 cannot shrink (big records compress poorly in practice)."""
    return random.Random(seed).randbytes(size // 2).hex()


def big_value(seed: int, size: int) -> bytes:
    """A JSON object of about ``size`` bytes: ``id`` and a ``payload`` string."""
    return json.dumps({"id": seed, "payload": payload(seed, size - 30)}).encode()


def cells_of(value: bytes) -> Cells:
    """The cells the default mapping writes for a JSON object of strings and numbers."""
    return {
        b"d:" + name.encode(): field.encode() if isinstance(field, str) else json.dumps(field).encode()
        for name, field in json.loads(value).items()
    }


def read_table(stack: StackInfo, table: str) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
    """Every row's newest cells with their versions, a few rows per Thrift call (rows are big)."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port, timeout=120_000)
    try:
        return {
            row: {column: (value, version) for column, (value, version) in cells.items()}
            for row, cells in connection.table(table).scan(batch_size=4, include_timestamp=True)
        }
    finally:
        connection.close()


@dataclass(frozen=True)
class World:
    topic: str
    table: str
    ledger_dsn: str


def thrift_out_of_memory_lines(stack: StackInfo) -> int:
    log = stack.state_dir / "logs" / "hbase-thrift.log"
    return sum(1 for line in log.read_text(errors="replace").splitlines() if "OutOfMemoryError" in line)


@contextmanager
def pipeline_world(stack: StackInfo, partitions: int, **topic_config: str) -> Iterator[World]:
    """A fresh ledger database, a topic and an HBase table with the default family ``d``."""
    suffix = uuid.uuid4().hex[:10]
    world = World(f"big-{suffix}", f"big_{suffix}", "")
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(world.topic, partitions, 1, config=topic_config)])[world.topic].result(15)
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(world.table, {"d": {}})
    hbase.close()  # the Thrift server drops a connection idle for 60 s: a new one at the end
    try:
        with fresh_database(stack.ledger_dsn) as dsn:
            yield dataclasses.replace(world, ledger_dsn=dsn)
    finally:
        hbase.open()
        hbase.delete_table(world.table, disable=True)
        hbase.close()
        admin.delete_topics([world.topic])[world.topic].result(timeout=15)


def round_trip(
    stack: StackInfo, world: World, kafka_extra: dict[str, object] | None = None, **options: Any
) -> EpochRoundTrip:
    """The pipeline ``big`` over the world's topic and table (``options``: further YAML fields)."""
    env = {
        **stack.conn_env,
        "AIRFLOW_CONN_EO_LEDGER": ledger_connection(world.ledger_dsn),
        "AIRFLOW_CONN_EO_KAFKA": kafka_connection(stack.kafka_bootstrap, kafka_extra),
    }
    return EpochRoundTrip(pipeline_spec("big", world.topic, world.table, **options), world.ledger_dsn, env)


def test_400_records_of_900_kb_commit_one_epoch_with_default_settings(
    stack: StackInfo, tmp_path: Path
) -> None:
    with pipeline_world(stack, 1) as world:
        sender = RecordSender(stack.kafka_bootstrap)
        for i in range(400):
            sender.send(world.topic, f"row-{i:03d}", big_value(i, 900_000), partition=0)
        sender.flush(120)
        ooms_before = thrift_out_of_memory_lines(stack)
        trip = round_trip(stack, world)  # every size setting at its default
        epoch = trip.reserve()
        assert epoch is not None
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(
            f"pipelines: [{{name: big, topics: [{world.topic}], hbase: {{table: {world.table}}}}}]\n"
        )
        result = submit_write(pipelines, "big", epoch.epoch_id, spark_env(trip.env))
        assert result.returncode == 0, result.output[-4000:]
        committed = trip.commit(epoch.epoch_id)
        metrics = committed.metrics or {}
        # a record's cells weigh about 900 KB: 4 fit in one 4 MiB segment, the fifth opens the next
        assert DEFAULT_BATCH_BYTES == 4 * 2**20
        assert (metrics["records"], metrics["segments"], metrics["bad_records"]) == (400, 100, 0)
        assert trip.epochs() == [EpochRow("stream", "COMMITTED", ((0, 0, 400),), ((0, 400, 0),))]
        assert trip.group_offsets() == {0: 400}
        rows = read_table(stack, world.table)
        assert sorted(rows) == [f"row-{i:03d}".encode() for i in range(400)]
        for i in range(400):
            version = 4 * (i // 4) + 3  # the segment's last offset
            expected = {column: (value, version) for column, value in cells_of(big_value(i, 900_000)).items()}
            assert rows[f"row-{i:03d}".encode()] == expected, f"row-{i:03d}"
        assert thrift_out_of_memory_lines(stack) == ooms_before


def mixed_records(partition: int) -> list[tuple[str, bytes | None]]:
    """30 records over 4 keys: small and near-limit values interleaved, tombstones among big ones."""
    rng = random.Random(partition)
    records: list[tuple[str, bytes | None]] = []
    for i in range(30):
        key = f"p{partition}-k{rng.randrange(4)}"
        draw = rng.random()
        if draw < 0.15:
            records.append((key, None))
        elif draw < 0.55:
            records.append((key, big_value(1000 * partition + i, NEAR_LIMIT - rng.randrange(0, 40_000))))
        else:
            records.append((key, json.dumps({"id": i, "note": f"small {i}"}).encode()))
    return records


def visible_rows(records: dict[int, list[tuple[str, bytes | None]]]) -> dict[bytes, Cells]:
    """Last record wins per cell; a tombstone deletes the row (keys never span partitions)."""
    rows: dict[bytes, Cells] = {}
    for partition_records in records.values():
        for key, value in partition_records:
            if value is None:
                rows.pop(key.encode(), None)
            else:
                rows.setdefault(key.encode(), {}).update(cells_of(value))
    return rows


def test_mixed_sizes_over_partitions_and_tasks_are_exact_and_a_backfill_replay_is_byte_identical(
    stack: StackInfo,
) -> None:
    records = {p: mixed_records(p) for p in range(3)}
    with pipeline_world(stack, 3) as world:
        sender = RecordSender(stack.kafka_bootstrap, **{"message.max.bytes": BROKER_MESSAGE_MAX_BYTES})
        for p, partition_records in records.items():
            for key, value in partition_records:
                sender.send(world.topic, key, value, partition=p)
        sender.flush(120)
        trip = round_trip(stack, world, spark={"split_size": 8})  # 4 tasks per partition
        epoch = trip.run_stream_epoch()
        assert epoch is not None and (epoch.metrics or {})["tasks"] == 12
        tombstones = sum(1 for part in records.values() for _, value in part if value is None)
        assert ((epoch.metrics or {})["records"], (epoch.metrics or {})["tombstones"]) == (90, tombstones)
        written = read_table(stack, world.table)
        assert {row: {c: v for c, (v, _) in cells.items()} for row, cells in written.items()} == visible_rows(
            records
        )
        replay = trip.reserve_backfill([PartitionRange(world.topic, p, 0, 30) for p in range(3)])
        assert trip.write_and_commit(replay).state.value == "COMMITTED"
        assert read_table(stack, world.table) == written  # values and versions


def test_a_record_batch_too_big_for_the_fetch_settings_fails_the_write_naming_where(stack: StackInfo) -> None:
    with pipeline_world(stack, 1, **{"max.message.bytes": "3000000"}) as world:
        sender = RecordSender(stack.kafka_bootstrap, **{"message.max.bytes": 3_000_000})
        for i in range(3):
            sender.send(world.topic, f"k{i}", b'{"v":1}', partition=0)
        sender.flush()  # the small records in batches of their own
        sender.send(world.topic, "huge", big_value(99, 2_000_000), partition=0)  # lz4 cannot shrink it
        sender.send(world.topic, "k9", b'{"v":2}', partition=0)
        sender.flush()
        fetch = {"fetch.max.bytes": 1_000_000, "receive.message.max.bytes": 1_000_512}
        trip = round_trip(
            stack, world, fetch, mapping={"max_record_bytes": 100_000}, bad_records="dead_letter"
        )
        epoch = trip.reserve()
        assert epoch is not None
        with pytest.raises(RangeReadError) as failure:
            trip.write(epoch.epoch_id)
        assert str(failure.value).startswith(
            f"cannot read {world.topic} partition 0 up to end offset 5: reached offset 3 (range [0, 5)): "
            "the record batch at offset 3 is larger than the consumer's receive.message.max.bytes ("
        )
        assert "Invalid response size" in str(failure.value)
        assert trip.epochs() == [EpochRow("stream", "RESERVED", ((0, 0, 5),), ())]
