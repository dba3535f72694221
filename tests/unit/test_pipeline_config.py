"""Pipelines YAML: defaults, a full example, file resolution, and every invalid case's message."""

# ruff: noqa: E501  (the tables below hold exact one-line error messages)

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_eo.config import (
    CapsSpec,
    MappingSpec,
    PipelineConfigError,
    PipelineSpec,
    SparkResources,
    SparkSpec,
    StartingSpec,
    load_pipelines,
    parse_pipelines_text,
)
from airflow_provider_eo.config.specs import DeadLettersSpec, WaitSpec

BASE: dict[str, Any] = {"name": "orders", "topics": ["orders"], "hbase": {"table": "orders"}}
DROP = object()


def document(**changes: Any) -> str:
    """YAML of one pipeline: BASE with dotted-path ``changes`` (value DROP deletes the key)."""
    pipeline = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = pipeline
        for parent in parents:
            node = node.setdefault(parent, {})
        if value is DROP:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return yaml.safe_dump({"pipelines": [pipeline]})


def test_minimal_pipeline_gets_every_default() -> None:
    specs = parse_pipelines_text(document(), "p.yaml")
    assert specs == {
        "orders": PipelineSpec(
            name="orders",
            topics=("orders",),
            topic_pattern=None,
            group_id="eo-orders",
            hbase_table="orders",
            column_family="d",
            hbase_keyvalue_maxsize=10_485_760,
            mapping=MappingSpec(),
            starting=StartingSpec("earliest", None, "earliest"),
            caps=CapsSpec(None, None),
            bad_records="fail",
            on_data_loss="fail",
            spark=SparkSpec({}, "client", None, SparkResources(), 100_000),
            schedule=None,
            batch_size=1000,
            batch_bytes=4_194_304,
            source_file="p.yaml",
        )
    }


FULL = """
pipelines:
  - name: clicks
    topic_pattern: "clicks-.*"
    group_id: clicks-loader
    hbase: {table: clicks, column_family: c, keyvalue_maxsize: 65536}
    mapping:
      row_key: "{user_id}:{region}"
      value_format: json
      function: "my_pkg.mappers:to_cells"
      max_record_bytes: 65536
    starting: {policy: timestamp, timestamp: "2024-01-01T00:00:00Z", new_partitions: latest}
    caps: {max_records_per_partition: 1000, max_records_total: 5000}
    bad_records: dead_letter
    on_data_loss: record_gap
    spark:
      conf: {spark.sql.shuffle.partitions: 4, spark.speculation: false}
      deploy_mode: cluster
      master: yarn
      resources: {driver_memory: 2g, driver_cores: 1, executor_memory: 4g, executor_cores: 2, num_executors: 3}
      split_size: 50000
      package: installed
    schedule: "*/5 * * * *"
    batch_size: 500
    batch_bytes: 4194304
  - name: orders
    topics: [orders, refunds]
    hbase: {table: orders}
    starting: {policy: timestamp, timestamp: 1700000000000}
"""


def test_full_example() -> None:
    specs = parse_pipelines_text(FULL, "p.yaml")
    assert list(specs) == ["clicks", "orders"]
    clicks = specs["clicks"]
    assert clicks == PipelineSpec(
        name="clicks",
        topics=(),
        topic_pattern="clicks-.*",
        group_id="clicks-loader",
        hbase_table="clicks",
        column_family="c",
        hbase_keyvalue_maxsize=65536,
        mapping=MappingSpec(
            row_key="{user_id}:{region}", function="my_pkg.mappers:to_cells", max_record_bytes=65536
        ),
        starting=StartingSpec("timestamp", 1_704_067_200_000, "latest"),
        caps=CapsSpec(1000, 5000),
        bad_records="dead_letter",
        on_data_loss="record_gap",
        spark=SparkSpec(
            {"spark.sql.shuffle.partitions": "4", "spark.speculation": "false"},
            "cluster",
            "yarn",
            SparkResources("2g", 1, "4g", 2, 3),
            50000,
            "installed",
        ),
        wait=WaitSpec(enabled=True),  # on by default: the pipeline has a schedule
        schedule="*/5 * * * *",
        batch_size=500,
        batch_bytes=4_194_304,
        source_file="p.yaml",
    )
    assert clicks.mapping.row_key_source == "template"
    assert clicks.mapping.template_fields == ("user_id", "region")
    assert specs["orders"].topics == ("orders", "refunds")
    assert specs["orders"].starting.timestamp_ms == 1_700_000_000_000


NESTED_MAPPING = """
pipelines:
  - name: orders
    topics: [orders]
    hbase: {table: orders}
    mapping:
      value_format: avro
      key_format: json
      row_key: "{key.region}:{customer.id}"
      row_key_prefix: "salt:16"
      columns: {cid: customer.id, items: order.items, total: order.total}
      flatten: [order.items]
      metadata_columns: {offset: _o, headers: _h}
      version: "field:order.updated_at"
"""


def test_dead_letters_section_and_its_round_trip_through_to_dict() -> None:
    text = document(bad_records="dead_letter", dead_letters={"topic": "orders.dead-letters"})
    spec = parse_pipelines_text(text, "p.yaml")["orders"]
    assert spec.dead_letters == DeadLettersSpec("orders.dead-letters")
    assert spec.dead_letters.marker_group(spec.group_id) == "eo-orders.dead-letters"
    assert PipelineSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


def test_full_mapping_section_and_its_round_trip_through_to_dict() -> None:
    spec = parse_pipelines_text(NESTED_MAPPING, "p.yaml")["orders"]
    assert spec.mapping == MappingSpec(
        value_format="avro",
        key_format="json",
        row_key="{key.region}:{customer.id}",
        row_key_prefix="salt:16",
        columns={"cid": "customer.id", "items": "order.items", "total": "order.total"},
        flatten=("order.items",),
        metadata_columns={"offset": "_o", "headers": "_h"},
        version="field:order.updated_at",
    )
    assert spec.mapping.template_fields == ("key.region", "customer.id")
    assert spec.mapping.row_key_includes_kafka_key is True
    assert spec.mapping.version_field == "order.updated_at"
    assert spec.mapping.value_paths == ("customer.id", "order.items", "order.total", "order.updated_at")
    assert spec.mapping.key_paths == ("region",)
    assert PipelineSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert spec.dead_letters is None
    assert MappingSpec(row_key="{customer.id}").row_key_includes_kafka_key is False
    assert MappingSpec().row_key_includes_kafka_key is True
    assert MappingSpec().version_field is None


@pytest.mark.parametrize(
    ("timestamp", "expected_ms"),
    [("2024-01-01T00:00:00+01:00", 1_704_063_600_000), ("2024-01-01", 1_704_067_200_000), (0, 0)],
)
def test_timestamp_forms(timestamp: Any, expected_ms: int) -> None:
    text = document(starting={"policy": "timestamp", "timestamp": timestamp})
    assert parse_pipelines_text(text, "p.yaml")["orders"].starting.timestamp_ms == expected_ms
    unquoted = f"pipelines: [{{name: o, topics: [t], hbase: {{table: t}}, starting: {{policy: timestamp, timestamp: {timestamp}}}}}]"
    assert parse_pipelines_text(unquoted, "p.yaml")["o"].starting.timestamp_ms == expected_ms


PIPELINE_KEYS = (
    "audit, backfill, bad_records, batch_bytes, batch_size, caps, dead_letters, group_id, hbase, mapping, name, on_data_loss, schedule, spark, "
    "starting, timeouts, topic_pattern, topics, wait"
)
P = "p.yaml: pipeline 'orders': "

INVALID_PIPELINES = [
    (document(topic="x"), P + f"field 'topic': unknown key (allowed here: {PIPELINE_KEYS})"),
    (document(topic_pattern="o.*"), P + "field 'topics': exactly one of 'topics' and 'topic_pattern' must be given"),
    (document(topics=DROP), P + "field 'topics': exactly one of 'topics' and 'topic_pattern' must be given"),
    (document(topics=[]), P + "field 'topics': must be a non-empty list of topic names, got []"),
    (document(topics="orders"), P + "field 'topics': must be a non-empty list of topic names, got 'orders'"),
    (document(topics=[""]), P + "field 'topics[0]': must be a non-empty string, got ''"),
    (document(topics=["a", "a"]), P + "field 'topics': lists a topic more than once"),
    (
        document(topics=DROP, topic_pattern="("),
        P + "field 'topic_pattern': is not a valid regular expression: missing ), unterminated subpattern at position 0",
    ),
    (document(group_id=""), P + "field 'group_id': must be a non-empty string, got ''"),
    (document(hbase=DROP), P + "field 'hbase.table': is required"),
    (document(hbase__ttl=5), P + "field 'hbase.ttl': unknown key (allowed here: column_family, keyvalue_maxsize, table)"),
    (document(hbase="orders"), P + "field 'hbase': must be a mapping, got str"),
    (
        document(mapping__row_key="user"),
        P + "field 'mapping.row_key': must be 'kafka_key' or a template like '{user_id}:{region}', got 'user'",
    ),
    (document(mapping__row_key="{a[0]}"), P + "field 'mapping.row_key': template fields must be dotted field paths such as {customer.id}, got {a[0]}"),
    (document(mapping__row_key="{}:x"), P + "field 'mapping.row_key': template fields must be dotted field paths such as {customer.id}, got {}"),
    (document(mapping__row_key="{a..b}"), P + "field 'mapping.row_key': template fields must be dotted field paths such as {customer.id}, got {a..b}"),
    (document(mapping__row_key="{a:>5}"), P + "field 'mapping.row_key': template fields must be dotted field paths such as {customer.id}, got {a}"),
    (document(mapping__row_key="{a"), P + "field 'mapping.row_key': is not a valid template: expected '}' before end of string"),
    (
        document(mapping__row_key="{key.id}"),
        P + "field 'mapping.row_key': names a field of the Kafka key ({key.id}) but key_format 'bytes' has no fields (use json, avro, protobuf or json_schema)",
    ),
    (document(mapping__row_key_prefix="md5:4"), P + "field 'mapping.row_key_prefix': must be 'hash:N' or 'salt:N', got 'md5:4'"),
    (document(mapping__row_key_prefix="hash:33"), P + "field 'mapping.row_key_prefix': hash:N takes 1 <= N <= 32 hex characters, got 'hash:33'"),
    (document(mapping__row_key_prefix="salt:1"), P + "field 'mapping.row_key_prefix': salt:N takes 2 <= N <= 10000 buckets, got 'salt:1'"),
    (document(mapping__function="pkg.mod.func"), P + "field 'mapping.function': must be an importable 'package.module:function' path, got 'pkg.mod.func'"),
    (document(mapping__value_format="xml"), P + "field 'mapping.value_format': must be one of json, string, bytes, avro, protobuf, json_schema, got 'xml'"),
    (document(mapping__key_format="int"), P + "field 'mapping.key_format': must be one of bytes, string, json, avro, protobuf, json_schema, got 'int'"),
    (document(mapping__max_record_bytes=0), P + "field 'mapping.max_record_bytes': must be an integer >= 1, got 0"),
    (document(mapping__columns=["a"]), P + "field 'mapping.columns': must map qualifiers to dotted field paths, got ['a']"),
    (document(mapping__columns={}), P + "field 'mapping.columns': must map qualifiers to dotted field paths, got {}"),
    (document(mapping__columns={"id": 5}), P + "field 'mapping.columns.id': must be a dotted field path, got 5"),
    (
        document(mapping__columns={"id": "a..b"}),
        P + "field 'mapping.columns.id': 'a..b' is not a dotted field path (segments separated by '.', without whitespace or any of . [ ] { } : !)",
    ),
    (document(mapping__columns={" ": "a"}), P + "field 'mapping.columns': qualifiers must be non-empty strings without control characters, got ' '"),
    (document(mapping__flatten="tags"), P + "field 'mapping.flatten': must be a list of dotted field paths, got 'tags'"),
    (document(mapping__flatten=["a.b"]), P + "field 'mapping.flatten[0]': 'a.b' is nested: without 'columns' only top-level fields are cells"),
    (
        document(mapping__columns={"t": "order.tags"}, mapping__flatten=["order.items"]),
        P + "field 'mapping.flatten[0]': 'order.items' is not a path of 'columns' (flatten names the paths of columns)",
    ),
    (document(mapping__flatten=["t", "t"]), P + "field 'mapping.flatten': lists a path more than once"),
    (document(mapping__metadata_columns=["offset"]), P + "field 'mapping.metadata_columns': must map topic, partition, offset, timestamp, headers to qualifiers, got ['offset']"),
    (document(mapping__metadata_columns={"key": "k"}), P + "field 'mapping.metadata_columns.key': is not Kafka metadata (allowed: topic, partition, offset, timestamp, headers)"),
    (document(mapping__metadata_columns={"offset": ""}), P + "field 'mapping.metadata_columns.offset': qualifiers must be non-empty strings without control characters, got ''"),
    (
        document(mapping__metadata_columns={"offset": "o", "partition": "o"}),
        P + "field 'mapping.metadata_columns.partition': qualifier 'o' is already a metadata column",
    ),
    (
        document(mapping__columns={"o": "order"}, mapping__metadata_columns={"offset": "o"}),
        P + "field 'mapping.metadata_columns.offset': qualifier 'o' is also in 'columns'",
    ),
    (document(mapping__version="timestamp"), P + "field 'mapping.version': must be 'offset' or 'field:<dotted.path>', got 'timestamp'"),
    (document(mapping__version="field:"), P + "field 'mapping.version': must be 'offset' or 'field:<dotted.path>', got 'field:'"),
    (
        document(mapping__version="field:a b"),
        P + "field 'mapping.version': 'a b' is not a dotted field path (segments separated by '.', without whitespace or any of . [ ] { } : !)",
    ),
    (
        document(mapping__function="m:f", mapping__value_format="avro"),
        P + "field 'mapping.value_format': does not apply with 'function' (the function reads the raw record)",
    ),
    (
        document(mapping__function="m:f", mapping__columns={"a": "a"}),
        P + "field 'mapping.columns': does not apply with 'function' (the function returns the cells)",
    ),
    (document(mapping__function="m:f", mapping__flatten=["a"]), P + "field 'mapping.flatten': does not apply with 'function' (the function returns the cells)"),
    (
        document(mapping__key="x"),
        P + "field 'mapping.key': unknown key (allowed here: columns, envelope, envelope_options, flatten, function, key_format, max_record_bytes, metadata_columns, row_key, row_key_prefix, tombstone_version, value_format, version)",
    ),
    (document(starting__policy="now"), P + "field 'starting.policy': must be one of earliest, latest, timestamp, got 'now'"),
    (document(starting__policy="timestamp"), P + "field 'starting.timestamp': is required when policy is 'timestamp'"),
    (document(starting__timestamp=5), P + "field 'starting.timestamp': is only allowed when policy is 'timestamp' (policy is 'earliest')"),
    (
        document(starting={"policy": "timestamp", "timestamp": "yesterday"}),
        P + "field 'starting.timestamp': must be ISO-8601 or epoch milliseconds, got 'yesterday'",
    ),
    (document(starting={"policy": "timestamp", "timestamp": -1}), P + "field 'starting.timestamp': must be >= 0 epoch milliseconds, got -1"),
    (document(starting__new_partitions="timestamp"), P + "field 'starting.new_partitions': must be one of earliest, latest, got 'timestamp'"),
    (document(caps__max_records_total=0), P + "field 'caps.max_records_total': must be an integer >= 1, got 0"),
    (document(caps__max_records_per_partition=True), P + "field 'caps.max_records_per_partition': must be an integer >= 1, got True"),
    (document(caps__max_records=5), P + "field 'caps.max_records': unknown key (allowed here: max_records_per_partition, max_records_total)"),
    (document(bad_records="skip"), P + "field 'bad_records': must be one of fail, dead_letter, got 'skip'"),
    (document(dead_letters={"topic": "dlq"}), P + "field 'dead_letters': needs bad_records: dead_letter (with 'fail' no record is dead-lettered)"),
    (document(bad_records="dead_letter", dead_letters={"topic": "a b"}), P + "field 'dead_letters.topic': must be a Kafka topic name (at most 249 letters, digits, '.', '_', '-'), got 'a b'"),
    (document(bad_records="dead_letter", dead_letters={}), P + "field 'dead_letters.topic': is required"),
    (document(bad_records="dead_letter", dead_letters={"name": "x"}), P + "field 'dead_letters.topic': is required"),
    (document(bad_records="dead_letter", dead_letters={"topic": "d", "partitions": 1}), P + "field 'dead_letters.partitions': unknown key (allowed here: topic)"),
    (document(bad_records="dead_letter", dead_letters="dlq"), P + "field 'dead_letters': must be a mapping, got str"),
    (document(on_data_loss="ignore"), P + "field 'on_data_loss': must be one of fail, record_gap, got 'ignore'"),
    (document(spark__deploy_mode="yarn"), P + "field 'spark.deploy_mode': must be one of client, cluster, got 'yarn'"),
    (document(spark__conf="x"), P + "field 'spark.conf': must be a mapping of Spark properties, got str"),
    (document(spark__conf={"a": [1]}), P + "field 'spark.conf.a': must map a property name to a scalar, got [1]"),
    (document(spark__master=""), P + "field 'spark.master': must be a non-empty string, got ''"),
    (document(spark__master="spark-master:7077"), P + "field 'spark.master': must be a Spark master URL (local[N], spark://, yarn, k8s://), got 'spark-master:7077'"),
    (
        document(spark__deploy_mode="cluster", spark__master="spark://m:7077"),
        P + "field 'spark.deploy_mode': 'cluster' with master 'spark://m:7077': Spark runs Python applications on a standalone cluster in client deploy mode only (cluster mode needs YARN)",
    ),
    (
        document(spark__deploy_mode="cluster", spark__master="k8s://https://k:6443"),
        P + "field 'spark.deploy_mode': 'cluster' with master 'k8s://https://k:6443': on Kubernetes the driver's connections would be written into the driver pod's spec; use client deploy mode (docs/operators.md)",
    ),
    (document(spark__package="wheel"), P + "field 'spark.package': must be one of zip, installed, got 'wheel'"),
    (
        document(spark__resources__driver_memory="lots"),
        P + "field 'spark.resources.driver_memory': must be a JVM memory size such as '2g' or '512m', got 'lots'",
    ),
    (document(spark__resources__num_executors=-1), P + "field 'spark.resources.num_executors': must be an integer >= 1, got -1"),
    (document(spark__resources__gpus=1), P + "field 'spark.resources.gpus': unknown key (allowed here: driver_cores, driver_memory, executor_cores, executor_memory, num_executors)"),
    (document(spark__split_size=0), P + "field 'spark.split_size': must be an integer >= 1, got 0"),
    (document(timeouts__write_minutes=0), P + "field 'timeouts.write_minutes': must be an integer >= 1, got 0"),
    (document(timeouts__write_minutes=300), P + "field 'timeouts.run_minutes': must be greater than write_minutes (300): a run includes its write, got 240"),
    (document(timeouts__seconds=5), P + "field 'timeouts.seconds': unknown key (allowed here: run_minutes, write_minutes)"),
    (document(spark__jars=["a.jar"]), P + "field 'spark.jars': unknown key (allowed here: conf, connect_conn_id, deploy_mode, master, mode, package, resources, split_size)"),
    (document(schedule="@sometimes"), P + "field 'schedule': unknown preset '@sometimes' (known: @once, @continuous, @hourly, @daily, @weekly, @monthly, @quarterly, @yearly, @annually)"),
    (document(schedule="every day"), P + "field 'schedule': must be a cron expression with 5 fields or a preset, got 'every day'"),
    (document(schedule=5), P + "field 'schedule': must be a cron expression, a preset or null, got 5"),
    (document(audit={"index_budget_bytes": 0}), P + "field 'audit.index_budget_bytes': must be an integer >= 1, got 0"),
    (document(audit={"index_budget_bytes": "1G"}), P + "field 'audit.index_budget_bytes': must be an integer >= 1, got '1G'"),
    (document(batch_size="10"), P + "field 'batch_size': must be an integer >= 1, got '10'"),
    (document(batch_size=1_000_001), P + "field 'batch_size': must be an integer <= 1000000, got 1000001"),
    (document(batch_bytes=0), P + "field 'batch_bytes': must be an integer >= 1, got 0"),
    (document(batch_bytes=268_435_457), P + "field 'batch_bytes': must be an integer <= 268435456, got 268435457"),
    (document(hbase__keyvalue_maxsize=0), P + "field 'hbase.keyvalue_maxsize': must be an integer >= 1, got 0"),
    (
        document(hbase__keyvalue_maxsize=1_000_000),
        P + "field 'mapping.max_record_bytes': 1048576 is larger than hbase.keyvalue_maxsize (1000000): a record "
        "within the limit could map to a cell HBase refuses; lower mapping.max_record_bytes, or raise "
        "hbase.keyvalue_maxsize together with the cluster's hbase.client.keyvalue.maxsize",
    ),
    (document(schedule="99 99 * * *"), P + "field 'schedule': is not a valid cron expression: [99 99 * * *] is not acceptable, out of range"),
    (document(topics=["a b"]), P + "field 'topics[0]': must be a Kafka topic name (at most 249 letters, digits, '.', '_', '-'), got 'a b'"),
    (document(topics=["t\n"]), P + "field 'topics[0]': must be a Kafka topic name (at most 249 letters, digits, '.', '_', '-'), got 't\\n'"),
    (document(topics=[".."]), P + "field 'topics[0]': must be a Kafka topic name (at most 249 letters, digits, '.', '_', '-'), got '..'"),
    (document(hbase__table="a/b"), P + "field 'hbase.table': must be an HBase table name ([namespace:]name of letters, digits, '_', '.', '-'), got 'a/b'"),
    (document(hbase__column_family=".d"), P + "field 'hbase.column_family': must be an HBase column family name (no ':', '/' or '\\', not starting with '.'), got '.d'"),
    (document(hbase__column_family="d:x"), P + "field 'hbase.column_family': must be an HBase column family name (no ':', '/' or '\\', not starting with '.'), got 'd:x'"),
    (document(group_id="g\tx"), P + "field 'group_id': must not contain control characters (newline, tab, NUL...), got 'g\\tx'"),
    (document(spark__resources__driver_memory="2g\n"), P + "field 'spark.resources.driver_memory': must be a JVM memory size such as '2g' or '512m', got '2g\\n'"),
]  # fmt: skip

INVALID_FILES = [
    ("", "p.yaml: is empty (expected a mapping with key 'pipelines')"),
    ("[1, 2]", "p.yaml: must be a mapping, got list"),
    ("pipelines: []\nextra: 1\n", "p.yaml: field 'extra': unknown key (allowed here: pipelines)"),
    ("other: 1\n", "p.yaml: field 'pipelines': is required"),
    ("pipelines: {}\n", "p.yaml: field 'pipelines': must be a list of pipelines, got dict"),
    ("pipelines: [x]\n", "p.yaml: field 'pipelines[0]': must be a mapping, got str"),
    ("pipelines: [{topics: [t]}]\n", "p.yaml: field 'pipelines[0].name': is required"),
    (
        "pipelines: [{name: 'bad name'}]\n",
        "p.yaml: field 'pipelines[0].name': must match ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ (letters, digits, '_', '.', '-'), got 'bad name'",
    ),
    (
        "pipelines: [{name: \"orders\\n\"}]\n",
        "p.yaml: field 'pipelines[0].name': must match ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ (letters, digits, '_', '.', '-'), got 'orders\\n'",
    ),
    (
        yaml.safe_dump({"pipelines": [{**BASE, "name": "n" * 201}]}),
        "p.yaml: field 'pipelines[0].name': must be at most 200 characters (it is part of DAG ids), got 201",
    ),
    (
        yaml.safe_dump({"pipelines": [BASE, BASE]}),
        "p.yaml: pipeline 'orders': field 'name': is declared more than once",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), INVALID_PIPELINES + INVALID_FILES)
def test_invalid_declarations_name_file_pipeline_and_field(text: str, message: str) -> None:
    with pytest.raises(PipelineConfigError) as info:
        parse_pipelines_text(text, "p.yaml")
    assert str(info.value) == message


def test_invalid_yaml() -> None:
    with pytest.raises(PipelineConfigError, match=r"(?s)^p\.yaml: invalid YAML: .*line 1, column 13"):
        parse_pipelines_text("pipelines: [", "p.yaml")


def test_file_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, from_env, in_dir = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "dags"
    in_dir.mkdir()
    for path, name in ((explicit, "a"), (from_env, "b"), (in_dir / "pipelines.yaml", "c")):
        path.write_text(yaml.safe_dump({"pipelines": [{**BASE, "name": name}]}))
    monkeypatch.delenv("EO_PIPELINES_FILE", raising=False)
    assert list(load_pipelines(default_dir=in_dir)) == ["c"]
    monkeypatch.setenv("EO_PIPELINES_FILE", str(from_env))
    assert list(load_pipelines(default_dir=in_dir)) == ["b"]
    assert list(load_pipelines(explicit, default_dir=in_dir)) == ["a"]
    assert load_pipelines(str(explicit))["a"].source_file == str(explicit)
    monkeypatch.delenv("EO_PIPELINES_FILE")
    with pytest.raises(PipelineConfigError) as info:  # nothing is guessed (no repository default)
        load_pipelines()
    assert str(info.value) == "pipelines file: not given: pass its path or set EO_PIPELINES_FILE"


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "none.yaml"
    with pytest.raises(PipelineConfigError) as info:
        load_pipelines(missing)
    assert str(info.value) == f"{missing}: cannot read pipelines file: No such file or directory"


def test_the_audit_index_budget_defaults_to_256_mib_and_is_taken_as_given() -> None:
    (default,) = parse_pipelines_text(document(), "p.yaml").values()
    (chosen,) = parse_pipelines_text(document(audit={"index_budget_bytes": 4096}), "p.yaml").values()
    assert (default.audit.index_budget_bytes, chosen.audit.index_budget_bytes) == (256 << 20, 4096)
