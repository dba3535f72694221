"""Registry formats through spark-submit: Protobuf and JSON Schema epochs written by the real
write application (local[2]) against the stack's Kafka, HBase and Schema Registry.

One topic per format (one partition, 17 records) carries every case of the format in one
epoch: versions 1 and 2 of the subject's schema interleaved on the same keys (v2 adds
``level``), a record with a schema id the registry never issued, a payload cut short, a
value framed with the *other* format's schema id, and a value without the magic byte.
Pipelines write one record per HBase segment (``batch_size: 1``), so every cell's version is
its record's offset.

* Protobuf: one spark-submit; exact cells with their versions, exact dead letters
  (ledger rows), the epoch's ranges and metrics, the group's offsets after commit.
* JSON Schema, with a registry outage mid-epoch: the write's task stands after its first
  segment (``spark.task.after_segment:hang``, tests/faults/crash_points.py) while the
  registry's JVM is SIGSTOPped; released, the task reaches the first version-2 record,
  whose schema it has not fetched yet, and fails (exit 4, ``RegistryUnavailable``): no dead
  letter, the epoch RESERVED, HBase holding only a prefix of the version-1 records. The
  registry is SIGCONTed and the write re-run (Airflow's retry): the same exact end state as
  without the outage, each dead letter once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import happybase
import psycopg2
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import airflow_provider_eo.spark.driver.application as app_module
from airflow_provider_eo.config import parse_pipelines_text
from eo_devtools.stack.process import running_pid
from tests.conftest import StackInfo
from tests.faults.crash_points import FAULT_HANG_ENV, FAULT_RELEASE_ENV, crash_env
from tests.integration.epoch_round_trip import EpochRoundTrip, EpochRow, ledger_connection
from tests.integration.ledger_support import fresh_database
from tests.integration.registry_spark_records import (
    COLUMNS,
    FIRST_V2,
    JSON_V1,
    JSON_V2,
    NO_MAGIC,
    OTHER_FORMAT,
    READING_V1,
    READING_V2,
    RECORDS,
    TRUNCATED,
    UNKNOWN,
    UNKNOWN_ID,
    expected_cells,
    keys,
    proto_class,
    registered,
    topic_values,
)
from tests.integration.spark_submit import SubmitResult, spark_env, submit_write
from tests.kafka_helpers import created_topic, produce
from tests.protobuf_text_schemas import framed
from tests.spark_startup import SPARK_SUBMIT, spark_conf_args

pytestmark = [pytest.mark.integration, pytest.mark.spark]

OUTAGE_TIMEOUT_S = 2


@dataclass
class Format:
    """One format's pipeline: its name, topic, table, schema ids and produced values."""

    pipeline: str
    topic: str
    table: str
    v1: int
    v2: int
    values: list[bytes]


@dataclass
class World:
    stack: StackInfo
    ledger_dsn: str
    env: dict[str, str]
    pipelines_file: Path
    formats: dict[str, Format]

    def trip(self, fmt: str) -> EpochRoundTrip:
        specs = parse_pipelines_text(self.pipelines_file.read_text(), str(self.pipelines_file))
        return EpochRoundTrip(specs[self.formats[fmt].pipeline], self.ledger_dsn, self.env)

    def cells(self, fmt: str) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
        """Every row's newest cells with their versions."""
        conn = happybase.Connection(self.stack.hbase_host, self.stack.hbase_port)
        try:
            return dict(conn.table(self.formats[fmt].table).scan(include_timestamp=True))
        finally:
            conn.close()

    def dead_letters(self, fmt: str) -> list[tuple[Any, ...]]:
        """(partition, offset, epoch_id, error, key, value, schema_id, error_class) in offset order."""
        with psycopg2.connect(self.ledger_dsn) as conn, conn.cursor() as cur:
            cur.execute(
                'SELECT "partition", "offset", epoch_id, error, key, value, schema_id, error_class'
                ' FROM eo.dead_letters WHERE pipeline = %s ORDER BY "partition", "offset"',
                (self.formats[fmt].pipeline,),
            )
            return [(*r[:4], bytes(r[4]), bytes(r[5]), *r[6:]) for r in cur.fetchall()]

    def registry_pid(self) -> int:
        pid = running_pid(self.stack.state_dir / "pids" / "schema-registry.pid")
        assert isinstance(pid, int), "the stack's schema-registry is not running"
        return pid


@pytest.fixture(scope="module")
def world(
    stack: StackInfo, schema_registry_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    suffix = uuid.uuid4().hex[:8]
    client = SchemaRegistryClient({"url": schema_registry_url})
    with (
        created_topic(stack.kafka_bootstrap, prefix="rs-proto") as proto_topic,
        created_topic(stack.kafka_bootstrap, prefix="rs-json") as json_topic,
        fresh_database(stack.ledger_dsn) as dsn,
    ):
        p1, p2 = registered(
            client, f"{proto_topic}-value", Schema(READING_V1, "PROTOBUF"), Schema(READING_V2, "PROTOBUF")
        )
        j1, j2 = registered(
            client,
            f"{json_topic}-value",
            Schema(json.dumps(JSON_V1), "JSON"),
            Schema(json.dumps(JSON_V2), "JSON"),
        )
        classes = {
            1: proto_class(READING_V1, "reading_v1.proto"),
            2: proto_class(READING_V2, "reading_v2.proto"),
        }

        def proto(version: int, name: str, count: int, level: float | None) -> bytes:
            fields = {"name": name, "count": count, **({} if level is None else {"level": level})}
            return framed({1: p1, 2: p2}[version], b"\x00", classes[version](**fields))

        ctx = SerializationContext(json_topic, MessageField.VALUE)
        conf = {"auto.register.schemas": False, "use.latest.version": False}
        json_serializers = {
            v: JSONSerializer(json.dumps(s), client, conf=conf) for v, s in ((1, JSON_V1), (2, JSON_V2))
        }

        def json_value(version: int, name: str, count: int, level: float | None) -> bytes:
            record = {"name": name, "count": count, **({} if level is None else {"level": level})}
            return bytes(json_serializers[version](record, ctx))

        formats = {
            "protobuf": Format(f"rs_proto_{suffix}", proto_topic, f"rs_proto_{suffix}", p1, p2,
                               topic_values(proto, j1)),
            "json_schema": Format(f"rs_json_{suffix}", json_topic, f"rs_json_{suffix}", j1, j2,
                                  topic_values(json_value, p1)),
        }  # fmt: skip
        hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
        for fmt in formats.values():
            produce(stack.kafka_bootstrap, fmt.topic, list(zip(keys(), fmt.values, strict=True)), partition=0)
            hbase.create_table(fmt.table, {"d": {"max_versions": 5}})
        hbase.close()
        pipelines_file = tmp_path_factory.mktemp("registry-spark") / "pipelines.yaml"
        pipelines_file.write_text(
            "pipelines:\n"
            + "".join(
                f"  - {{name: {f.pipeline}, topics: [{f.topic}], hbase: {{table: {f.table}}}, batch_size: 1,"
                f" bad_records: dead_letter,\n"
                f"     mapping: {{value_format: {name}, columns: {json.dumps(COLUMNS)}}}}}\n"
                for name, f in formats.items()
            )
        )
        where = urlsplit(schema_registry_url)
        registry = {
            "conn_type": "http",
            "host": where.hostname,
            "port": where.port,
            "extra": {"path": where.path, "timeout": OUTAGE_TIMEOUT_S, "max.retries": 0},
        }
        env = spark_env(
            {
                **stack.conn_env,
                "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn),
                "AIRFLOW_CONN_SCHEMA_REGISTRY": json.dumps(registry),
            }
        )
        yield World(stack, dsn, env, pipelines_file, formats)
        hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)  # a fresh one: idle ones get closed
        for fmt in formats.values():
            hbase.delete_table(fmt.table, disable=True)
        hbase.close()
    client.close()


def expected_dead_letters(world: World, fmt: str, epoch_id: int) -> list[tuple[Any, ...]]:
    f = world.formats[fmt]
    other = "PROTOBUF" if fmt == "json_schema" else "JSON"
    other_id = world.formats["protobuf" if fmt == "json_schema" else "json_schema"].v1
    truncated = {
        "protobuf": f"value: protobuf payload of schema id {f.v2} (message eo.reg.Reading) does not decode: "
        "DecodeError: Error parsing message with type 'eo.reg.Reading': Wire format was corrupt",
        # the compact JSON {"name":"c","count":11,"level":1.25} without its last 3 characters
        "json_schema": f"value: json_schema payload of schema id {f.v2} is not JSON: "
        "Expecting ',' delimiter: line 1 column 33 (char 32)",
    }[fmt]
    unknown = f"value: schema id {UNKNOWN_ID} is unknown to the registry (HTTP 404, error code 40403)"
    wrong_format = f"value: schema id {other_id} is a {other} schema, the pipeline's value format is {fmt}"
    errors = {
        UNKNOWN: (unknown, UNKNOWN_ID),
        TRUNCATED: (truncated, f.v2),
        OTHER_FORMAT: (wrong_format, other_id),
        NO_MAGIC: ("value: no Confluent wire-format magic byte (first byte 0x7b)", None),
    }
    return [
        (0, offset, epoch_id, error, b"x", f.values[offset], schema_id, "BadRecord")
        for offset, (error, schema_id) in sorted(errors.items())
    ]


def assert_committed_exactly(world: World, fmt: str, trip: EpochRoundTrip, epoch_id: int) -> None:
    """Exact cells and versions, dead letters, epoch row and group offsets of a committed epoch."""
    assert trip.commit(epoch_id).state.value == "COMMITTED"
    assert world.cells(fmt) == expected_cells()
    assert world.dead_letters(fmt) == expected_dead_letters(world, fmt, epoch_id)
    assert trip.epochs() == [EpochRow("stream", "COMMITTED", ((0, 0, RECORDS),), ((0, RECORDS, 0),))]
    assert trip.group_offsets() == {0: RECORDS}


def test_protobuf_versions_and_bad_records_through_spark_submit(world: World) -> None:
    trip = world.trip("protobuf")
    epoch = trip.reserve()
    assert epoch is not None
    result = submit_write(world.pipelines_file, world.formats["protobuf"].pipeline, epoch.epoch_id, world.env)
    assert result.returncode == 0, result.output[-3000:]
    assert trip.epochs() == [EpochRow("stream", "WRITTEN", ((0, 0, RECORDS),), ((0, RECORDS, 0),))]
    assert_committed_exactly(world, "protobuf", trip, epoch.epoch_id)


def start_held_write(
    world: World, pipeline: str, epoch_id: int, release: Path, log: Path
) -> subprocess.Popen[bytes]:
    """spark-submit the write with its task held after its first segment until ``release`` exists."""
    env = {**world.env, **crash_env("spark.task.after_segment:hang"), FAULT_HANG_ENV: "300",
           FAULT_RELEASE_ENV: str(release)}  # fmt: skip
    argv = [SPARK_SUBMIT, "--master", "local[2]", *spark_conf_args(), app_module.__file__, "--pipeline",
            pipeline, "--epoch-id", str(epoch_id), "--pipelines-file", str(world.pipelines_file)]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_output(proc: subprocess.Popen[bytes], log: Path, text: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        assert proc.poll() is None, f"spark-submit exited {proc.returncode}:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)
    raise AssertionError(f"no {text!r} after {timeout}s")


def test_json_schema_registry_outage_mid_epoch_then_retry(world: World, tmp_path: Path) -> None:
    f = world.formats["json_schema"]
    trip = world.trip("json_schema")
    epoch = trip.reserve()
    assert epoch is not None
    release, log = tmp_path / "release", tmp_path / "write-1.log"
    proc = start_held_write(world, f.pipeline, epoch.epoch_id, release, log)
    registry = world.registry_pid()
    try:
        wait_for_output(proc, log, "EO fault point spark.task.after_segment: hanging")
        os.kill(registry, signal.SIGSTOP)
        try:
            release.touch()
            code = proc.wait(timeout=300)
        finally:
            os.kill(registry, signal.SIGCONT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    output = log.read_text(errors="replace")
    assert code == 4, output[-3000:]
    assert f"unreachable for schema id {f.v2}" in output
    assert world.dead_letters("json_schema") == []
    assert trip.epochs() == [EpochRow("stream", "RESERVED", ((0, 0, RECORDS),), ())]
    partial = world.cells("json_schema")
    prefixes = [expected_cells(upto) for upto in range(1, FIRST_V2 + 1)]
    assert partial in prefixes, partial  # records before the first v2 one, each at its offset
    retry: SubmitResult = submit_write(world.pipelines_file, f.pipeline, epoch.epoch_id, world.env)
    assert retry.returncode == 0, retry.output[-3000:]
    assert_committed_exactly(world, "json_schema", trip, epoch.epoch_id)
