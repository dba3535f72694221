"""Debezium change events on the real stack, written by spark-submit: exact cells and versions.

One topic of 3 partitions carries JSON change events of a PostgreSQL table (``source.lsn``),
one row's changes spread over the partitions and out of log order; two pipelines read it:

* ``decl``: the declarative mapping (``row_key: "{id}"``, ``version: field:source.lsn``, op
  and LSN as metadata columns, bad records dead-lettered, truncates refused);
* ``func``: a user function (``cdc_cells`` below) with ``truncate: ignore``.

Row 1: c@100 (with a column ``old``), u@150, d@200 and its tombstone, c@250 (re-insert),
u@300, then a re-snapshot r@500 arriving last: ``u@300`` stays visible, ``old`` stays deleted.
Row 2: c@110, d@210 and its tombstone, then u@150 arriving later from another partition:
the row stays deleted. Row 3: snapshot r@50, re-snapshot r@500: the newer snapshot wins.
Row 4: a JSON-schema-wrapped c@120. A truncate and each bad input (missing op, unknown op,
u without after, missing source position) are dead letters with their reasons; under ``func``
the truncate is skipped. A backfill replay of the whole range leaves ``decl``'s table
byte-identical, versions included, and ``eo-ledger audit`` finds it clean.

Then the other formats: the demo's CDC feed (Debezium-shaped Avro from the stack's registry)
over several epochs and a replay, checked by its oracle; Protobuf and JSON Schema envelopes
mapped to exact puts and deletes.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import happybase
import psycopg2
import pytest
import yaml
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.formats.registry import RegistrySettings, SchemaCache, registry_decoder
from airflow_provider_eo.ledger import Ledger, PartitionRange
from airflow_provider_eo.spark.records import KafkaRecord, RowDelete, RowPut
from airflow_provider_eo.spark.task.mapping import build_mapper
from airflow_provider_eo.spark.task.mapping.envelope import STREAM_BASE, Change
from eo_devtools.demo.feeds import cdc_feed
from eo_devtools.demo.sample_events import produce_records
from eo_devtools.demo.topic_records import read_topic
from eo_devtools.demo.verification import verify_pipeline
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import EpochRoundTrip, ledger_connection, pipeline_spec
from tests.integration.ledger_support import fresh_database
from tests.integration.spark_submit import spark_env, submit_write
from tests.kafka_helpers import RecordSender, created_topic
from tests.protobuf_text_schemas import compiled_files, framed

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SOURCE = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "items"}
Cells = dict[bytes, tuple[bytes, int]]


def change(op: str | None, lsn: int | None, after: Any = None, before: Any = None) -> bytes:
    body: dict[str, Any] = {"before": before, "after": after, "source": {**SOURCE, "lsn": lsn}}
    if op is not None:
        body["op"] = op
    return json.dumps(body).encode()


def wrapped(value: bytes) -> bytes:
    return json.dumps(
        {"schema": {"type": "struct", "name": "items.Envelope"}, "payload": json.loads(value)}
    ).encode()


def key(row: int) -> bytes:
    return json.dumps({"id": row}).encode()


# (partition, key, value); within a partition in this order
EVENTS: list[tuple[int, bytes, bytes | None]] = [
    (0, key(1), change("d", 200, before={"id": 1})),
    (0, key(1), None),  # the tombstone after the delete
    (0, key(2), change("c", 110, {"id": 2, "name": "two"})),
    (0, key(3), change("r", 50, {"id": 3, "name": "snap-50"})),
    (0, key(9), change(None, 130, {"id": 9})),  # missing op
    (1, key(1), change("c", 250, {"id": 1, "name": "c250"})),
    (1, key(1), change("c", 100, {"id": 1, "name": "c100", "old": "x"})),
    (1, key(2), change("u", 150, {"id": 2, "name": "late-150"})),  # after its delete at 210
    (1, key(4), wrapped(change("c", 120, {"id": 4, "name": "wrapped"}))),
    (1, key(9), change("x", 131, {"id": 9})),  # unknown op
    (1, b"", change("t", 132)),  # truncate
    (2, key(1), change("u", 150, {"id": 1, "name": "u150"})),
    (2, key(2), change("d", 210, before={"id": 2})),
    (2, key(2), None),
    (2, key(1), change("u", 300, {"id": 1, "name": "u300"})),
    (2, key(9), change("u", 133, None, before={"id": 9})),  # u without after
    (2, key(9), change("u", None, {"id": 9})),  # missing source position
    (2, key(1), change("r", 500, {"id": 1, "name": "resnap"})),  # a re-snapshot after live changes
    (2, key(3), change("r", 500, {"id": 3, "name": "snap-500"})),
]
TABLE_NAME = "shop.public.items"
BAD = {  # (partition, offset) -> reason
    (0, 4): "Debezium envelope has no 'op' field",
    (1, 4): "unknown Debezium op 'x' (expected one of c, u, d, r, t)",
    (
        1,
        5,
    ): f"truncate of table {TABLE_NAME} (op 't'); set envelope_options.truncate: ignore to skip truncates",
    (2, 4): f"Debezium op 'u' has no 'after' image (table {TABLE_NAME})",
    (2, 5): "missing source position: 'source.lsn' is missing or null (op 'u')",
}


def stream(lsn: int) -> int:
    return STREAM_BASE + 2 * lsn + 1


def cdc_cells(record: KafkaRecord, change: Change) -> dict[str, Any] | None:
    """The user function of ``func``: the name upper-cased, and the op."""
    image = change.image or {}
    return {"id": image["id"], "name": str(image.get("name", "")).upper(), "op": change.op}


@dataclass(frozen=True)
class World:
    topic: str
    tables: dict[str, str]
    trips: dict[str, EpochRoundTrip]
    pipelines_file: Path
    env: dict[str, str]
    dsn: str


def entries(topic: str, tables: dict[str, str]) -> list[dict[str, Any]]:
    common = {"topics": [topic], "bad_records": "dead_letter", "batch_size": 3}
    mapping = {"envelope": "debezium", "version": "field:source.lsn", "row_key": "{id}"}
    return [
        {"name": tables["decl"], "hbase": {"table": tables["decl"]}, **common,
         "mapping": {**mapping, "metadata_columns": {"op": "op", "source.lsn": "lsn"}}},
        {"name": tables["func"], "hbase": {"table": tables["func"]}, **common,
         "mapping": {**mapping, "function": "tests.integration.test_cdc_envelopes:cdc_cells",
                     "envelope_options": {"truncate": "ignore"}}},
    ]  # fmt: skip


@pytest.fixture(scope="module")
def world(stack: StackInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    suffix = uuid.uuid4().hex[:8]
    tables = {name: f"cdc_{name}_{suffix}" for name in ("decl", "func")}
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    for table in tables.values():
        hbase.create_table(table, {"d": {"max_versions": 1}})
    hbase.close()
    with (
        created_topic(stack.kafka_bootstrap, partitions=3, prefix="cdc") as topic,
        fresh_database(stack.ledger_dsn) as dsn,
    ):
        sender = RecordSender(stack.kafka_bootstrap)
        for partition, record_key, value in EVENTS:
            sender.send(topic, record_key, value, partition=partition)
        sender.flush()
        pipelines_file = tmp_path_factory.mktemp("cdc") / "pipelines.yaml"
        specs = entries(topic, tables)
        pipelines_file.write_text(json.dumps({"pipelines": specs}))
        env = {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)}
        trips = {
            name: EpochRoundTrip(pipeline_spec(**{k: v for k, v in entry.items() if k != "topics"},
                                               topic=topic, table=tables[name]), dsn, env)
            for name, entry in zip(("decl", "func"), specs, strict=True)
        }  # fmt: skip
        path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
        yield World(topic, tables, trips, pipelines_file, {**spark_env(env), "PYTHONPATH": path}, dsn)
    hbase.open()
    for table in tables.values():
        hbase.delete_table(table, disable=True)
    hbase.close()


def submit(world: World, name: str, epoch_id: int) -> None:
    result = submit_write(world.pipelines_file, world.tables[name], epoch_id, world.env)
    assert result.returncode == 0, result.output[-4000:]


def scan(stack: StackInfo, table: str) -> dict[bytes, Cells]:
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        return {row: dict(cells) for row, cells in connection.table(table).scan(include_timestamp=True)}
    finally:
        connection.close()


def dead_letters(dsn: str, pipeline: str) -> dict[tuple[int, int], str]:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            'SELECT "partition", "offset", error FROM eo.dead_letters WHERE pipeline = %s', (pipeline,)
        )
        return {(p, o): error for p, o, error in cur.fetchall()}


def stream_epoch(world: World, name: str) -> dict[str, Any]:
    trip = world.trips[name]
    epoch = trip.reserve()
    assert epoch is not None
    submit(world, name, epoch.epoch_id)
    return trip.commit(epoch.epoch_id).metrics or {}


def test_declarative_cdc_cells_versions_dead_letters_replay_and_audit(
    world: World, stack: StackInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = stream_epoch(world, "decl")
    counts = ("records", "tombstones", "changes_skipped", "bad_records")
    assert tuple(metrics[name] for name in counts) == (19, 2, 2, 5)
    rows = scan(stack, world.tables["decl"])
    assert rows == {
        b"1": {b"d:id": (b"1", stream(300)), b"d:name": (b"u300", stream(300)),
               b"d:op": (b"u", stream(300)), b"d:lsn": (b"300", stream(300))},
        b"3": {b"d:id": (b"3", 500), b"d:name": (b"snap-500", 500),
               b"d:op": (b"r", 500), b"d:lsn": (b"500", 500)},
        b"4": {b"d:id": (b"4", stream(120)), b"d:name": (b"wrapped", stream(120)),
               b"d:op": (b"c", stream(120)), b"d:lsn": (b"120", stream(120))},
    }  # fmt: skip
    name = world.tables["decl"]
    assert dead_letters(world.dsn, name) == BAD

    trip = world.trips["decl"]
    replay = trip.reserve_backfill(
        [PartitionRange(world.topic, p, 0, end) for p, end in ((0, 5), (1, 6), (2, 8))]
    )
    submit(world, "decl", replay.epoch_id)
    trip.commit(replay.epoch_id)
    assert scan(stack, world.tables["decl"]) == rows

    capsys.readouterr()
    with trip.connections():
        code = main(
            ["--dsn", world.dsn, "audit", "--pipelines-file", str(world.pipelines_file), "--pipeline", name]
        )
    answer = json.loads(capsys.readouterr().out)
    assert (code, answer["verdict"], answer["findings"]) == (0, "clean", []), json.dumps(answer, indent=1)


def test_a_user_function_under_the_envelope(world: World, stack: StackInfo) -> None:
    metrics = stream_epoch(world, "func")
    assert (metrics["tombstones"], metrics["changes_skipped"], metrics["bad_records"]) == (2, 3, 4)
    assert scan(stack, world.tables["func"]) == {
        b"1": {b"d:id": (b"1", stream(300)), b"d:name": (b"U300", stream(300)),
               b"d:op": (b"u", stream(300))},
        b"3": {b"d:id": (b"3", 500), b"d:name": (b"SNAP-500", 500), b"d:op": (b"r", 500)},
        b"4": {b"d:id": (b"4", stream(120)), b"d:name": (b"WRAPPED", stream(120)),
               b"d:op": (b"c", stream(120))},
    }  # fmt: skip
    assert set(dead_letters(world.dsn, world.tables["func"])) == set(BAD) - {(1, 5)}


def test_the_demo_cdc_feed_in_avro_over_epochs_and_a_replay_is_exact(stack: StackInfo) -> None:
    """The demo's CDC pipeline as ``dags/pipelines.yaml`` declares it, on Avro envelopes from the
    stack's registry: 300 events over 3 partitions, epochs of at most 60 records (one row's
    changes land in different epochs, out of log order), a replay of partition 0: HBase holds
    exactly the simulated table, every bad event is a dead letter."""
    declared = next(
        entry
        for entry in yaml.safe_load((REPO / "dags" / "pipelines.yaml").read_text())["pipelines"]
        if entry["name"] == "demo_customers_cdc"
    )
    suffix = uuid.uuid4().hex[:8]
    table = f"cdc_demo_{suffix}"
    feed = cdc_feed("d", stack.schema_registry_url, 300)
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(table, {"d": {}})
    try:
        with (
            created_topic(stack.kafka_bootstrap, partitions=3, prefix="cdcdemo") as topic,
            fresh_database(stack.ledger_dsn) as dsn,
        ):
            produced = produce_records(stack.kafka_bootstrap, topic, 3, feed.events(topic))
            options = {"mapping": declared["mapping"], "bad_records": "dead_letter", "batch_size": 7,
                       "caps": {"max_records_total": 60}}  # fmt: skip
            spec = pipeline_spec(f"cdc_demo_{suffix}", topic, table, **options)
            env = {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)}
            trip = EpochRoundTrip(spec, dsn, env)
            epochs = 0
            while trip.run_stream_epoch() is not None:
                epochs += 1
            ends = {p: 1 + max(r.offset for r in produced if r.partition == p) for p in range(3)}
            trip.write_and_commit(trip.reserve_backfill([PartitionRange(topic, 0, 0, ends[0])]))
            everything = read_topic(stack.kafka_bootstrap, topic, 3)
            oracle = feed.oracle(everything)
            with Ledger(dsn) as ledger, trip.connections():
                hbase.open()
                report = verify_pipeline(
                    spec,
                    everything,
                    ledger=ledger,
                    offsets=trip.kafka,
                    hbase=hbase,
                    oracle=oracle,
                    fold=feed.fold,
                )
            rows = feed.fold(everything, oracle)
            ops = {cells[b"d:op"] for cells in rows.values()}
            assert (len(everything), epochs, report.problems, report.dead_letters) == (
                len(produced), -(-len(produced) // 60), [], 4,
            )  # fmt: skip
            # every live row has a streamed change (c or u), which outranks its snapshot reads
            assert (report.hbase_rows, ops) == (len(rows), {b"c", b"u"})
    finally:
        hbase.open()
        hbase.delete_table(table, disable=True)
        hbase.close()


ENVELOPE_PROTO = """syntax = "proto3";
package eo.cdc;

message Envelope { Row before = 1; Row after = 2; Source source = 3; string op = 4; }
message Row { int64 id = 1; string name = 2; }
message Source { string table = 1; int64 lsn = 2; }
"""
ENVELOPE_JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Envelope",
    "type": "object",
    "definitions": {"row": {"type": ["object", "null"],
                            "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}},
    "properties": {"before": {"$ref": "#/definitions/row"}, "after": {"$ref": "#/definitions/row"},
                   "op": {"type": "string"},
                   "source": {"type": "object", "properties": {"table": {"type": "string"},
                                                               "lsn": {"type": "integer"}}}},
    "required": ["op", "source"],
}  # fmt: skip


def test_protobuf_and_json_schema_envelopes_map_like_json(schema_registry_url: str) -> None:
    """The envelope is read after decoding: Protobuf (unset ``before`` decodes to None) and JSON
    Schema change events from the stack's registry give the same puts and deletes as JSON."""
    client = SchemaRegistryClient({"url": schema_registry_url})
    name = f"eo-cdc-formats-{uuid.uuid4().hex[:8]}"
    pool = descriptor_pool.DescriptorPool()
    for file in compiled_files({"eo/cdc/envelope.proto": ENVELOPE_PROTO}):
        pool.Add(file)
    envelope, row = (GetMessageClass(pool.FindMessageTypeByName(f"eo.cdc.{n}")) for n in ("Envelope", "Row"))
    sid = client.register_schema(f"{name}-proto-value", Schema(ENVELOPE_PROTO, "PROTOBUF"))
    source = {"table": "items", "lsn": 40}
    update = envelope(after=row(id=7, name="ann"), op="u", source=source)
    delete = envelope(before=row(id=7, name="ann"), op="d", source={"table": "items", "lsn": 41})
    serializer = JSONSerializer(json.dumps(ENVELOPE_JSON_SCHEMA), client)
    context = SerializationContext(f"{name}-json", MessageField.VALUE)

    def serialize(before: Any, after: Any, op: str, lsn: int) -> bytes:
        event = {"before": before, "after": after, "op": op, "source": {"table": "items", "lsn": lsn}}
        return serializer(event, context)

    values = {
        "protobuf": (framed(sid, b"\x00", update), framed(sid, b"\x00", delete)),
        "json_schema": (
            serialize(None, {"id": 7, "name": "ann"}, "u", 40),
            serialize({"id": 7}, None, "d", 41),
        ),
    }
    cache = SchemaCache.from_settings(RegistrySettings(url=schema_registry_url))
    try:
        for fmt, (put_value, delete_value) in values.items():
            options: dict[str, Any] = {
                "envelope": "debezium",
                "version": "field:source.lsn",
                "row_key": "{id}",
            }
            spec = MappingSpec(value_format=fmt, **options)
            mapper = build_mapper(spec, "d", value_decoder=registry_decoder(fmt, "value", cache))
            records = (KafkaRecord("t", 0, n, b"7", v) for n, v in enumerate((put_value, delete_value)))
            mapped = [mapper.map(record) for record in records]
            assert mapped == [
                RowPut(b"7", {b"d:id": b"7", b"d:name": b"ann"}, stream(40)),
                RowDelete(b"7", (b"d",), STREAM_BASE + 82),
            ], fmt
    finally:
        cache.close()
        client.close()
