"""Which value fields a mapping can reach (spark/task/mapping/reachable_fields.py), and that a
mapper reading Avro through that selection maps every record exactly as from the whole value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.common.avro import parse_schema_with_repo

from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.field_selection import merged, selection_of
from airflow_provider_eo.formats.registry.avro_decoder import AvroDecoder
from airflow_provider_eo.formats.registry.schema_cache import SchemaCache
from airflow_provider_eo.spark.records import KafkaRecord
from airflow_provider_eo.spark.task.mapping import build_mapper
from airflow_provider_eo.spark.task.mapping.reachable_fields import value_fields
from tests.unit.test_avro_compiled_reader import payload

TABLE = {"db": None, "schema": None, "table": None, "collection": None}


def test_selection_of_paths_keeps_each_node_whole_and_merges() -> None:
    assert selection_of([("a", "b"), ("a", "c", "d"), ("e",)]) == {
        "a": {"b": None, "c": {"d": None}},
        "e": None,
    }
    assert selection_of([("a", "b"), ("a",), ("a", "c")]) == {"a": None}  # an ancestor kept whole wins
    assert selection_of([("x",), ()]) is None and selection_of([]) == {}
    assert merged({"a": {"b": None}}, {"a": {"c": None}, "d": {}}) == {"a": {"b": None, "c": None}, "d": {}}
    assert merged({"a": {"b": None}}, None) is None


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        pytest.param({}, None, id="columns-null-every-top-level-field"),
        pytest.param(
            {"function": "tests.unit.test_mapping:user_mapper", "columns": {"a": "a"}}, None, id="function"
        ),
        pytest.param(
            {
                "columns": {"n": "customer.name", "t": "items"},
                "flatten": ("items",),
                "row_key": "{customer.id}:{key.id}",
                "version": "field:meta.ts",
            },
            {"customer": {"name": None, "id": None}, "items": None, "meta": {"ts": None}},
            id="columns-template-version",
        ),
        pytest.param(
            {"envelope": "debezium"},
            {"op": None, "source": TABLE, "after": None, "before": {}, "*": {}},
            id="envelope-default",
        ),
        pytest.param(
            {
                "envelope": "debezium",
                "version": "field:source.file+source.pos",
                "row_key": "{id}:{region.code}",
                "columns": {"n": "name", "c": "region"},
                "metadata_columns": {"op": "op", "source.ts_ms": "src_ts", "offset": "off"},
            },
            {
                "op": None,
                "source": {"file": None, "pos": None, "ts_ms": None, **TABLE},
                "after": {"name": None, "region": None, "id": None},
                "before": {"id": None, "region": {"code": None}},
                "*": {},
            },
            id="envelope-columns-template-metadata-composite-version",
        ),
        pytest.param(
            {"envelope": "debezium", "version": "field:source.lsn", "metadata_columns": {"source": "src"}},
            {"op": None, "source": None, "after": None, "before": {}, "*": {}},
            id="envelope-whole-source-as-metadata",
        ),
    ],
)
def test_value_fields(mapping: dict[str, Any], expected: Any) -> None:
    assert value_fields(MappingSpec(value_format="avro", **mapping)) == expected


ROW = {
    "type": "record",
    "name": "Row",
    "namespace": "s",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {
            "name": "region",
            "type": {
                "type": "record",
                "name": "Region",
                "fields": [{"name": "code", "type": "string"}, {"name": "label", "type": ["null", "string"]}],
            },
        },
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
SOURCE = {
    "type": "record",
    "name": "Source",
    "namespace": "s",
    "fields": [
        {"name": "version", "type": "string"},
        {"name": "db", "type": "string"},
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        {"name": "txId", "type": ["null", "long"]},
        {"name": "lsn", "type": ["null", "long"]},
        {"name": "ts_ms", "type": "long"},
    ],
}
ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "namespace": "s",
    "fields": [
        {"name": "before", "type": ["null", ROW]},
        {"name": "after", "type": ["null", "s.Row"]},
        {"name": "source", "type": SOURCE},
        {"name": "op", "type": ["null", "string"]},
        {"name": "ts_ms", "type": ["null", "long"]},
        {
            "name": "transaction",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Tx",
                    "fields": [{"name": "id", "type": "string"}, {"name": "total_order", "type": "long"}],
                },
            ],
        },
    ],
}


def change(op: str | None, lsn: int | None, after: Any = None, before: Any = None) -> dict[str, Any]:
    source = {
        "version": "2.7",
        "db": "shop",
        "schema": "public",
        "table": "rows",
        "txId": 4,
        "lsn": lsn,
        "ts_ms": 1_700_000_000_000,
    }
    return {
        "before": before,
        "after": after,
        "source": source,
        "op": op,
        "ts_ms": 5,
        "transaction": {"id": "tx", "total_order": 3},
    }


def image(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "name": f"n{i}",
        "region": {"code": f"r{i % 2}", "label": None},
        "tags": ["a", "b"][: i % 3],
    }


EVENTS = [
    change("c", 100, after=image(1)),
    change("u", 101, after=image(1), before=image(1)),
    change("r", 50, after=image(2)),
    change("d", 102, before=image(1)),
    change("d", 103),  # no before image
    change("t", 104),  # truncate: a bad record naming the table
    change("u", 105),  # no after image
    change(None, 106, after=image(3)),  # no op
    change("x", 107, after=image(3)),  # unknown op
    change("u", None, after=image(3)),  # no position
]
MAPPINGS = [
    {"envelope": "debezium"},
    {
        "envelope": "debezium",
        "version": "field:source.lsn",
        "row_key": "{id}:{region.code}",
        "columns": {"n": "name", "r": "region", "t": "tags"},
        "flatten": ("tags",),
        "metadata_columns": {"op": "op", "source.txId": "tx", "partition": "p"},
    },
    {
        "envelope": "debezium",
        "version": "field:source.lsn",
        "row_key": "{id}",
        "metadata_columns": {"source": "src"},
    },
    {"columns": {"c": "after.region.code"}, "version": "field:source.lsn", "row_key": "{after.id}"},
]


def outcome(mapper: Any, record: KafkaRecord) -> Any:
    try:
        return mapper.map(record)
    except BadRecord as exc:
        return f"bad: {exc}"


@pytest.mark.parametrize(
    "mapping", MAPPINGS, ids=["cdc-default", "cdc-everything", "cdc-source-cell", "plain"]
)
def test_a_mapper_on_the_selection_maps_every_event_as_on_the_whole_value(mapping: dict[str, Any]) -> None:
    schema = parse_schema_with_repo(json.dumps(ENVELOPE), {})
    spec = MappingSpec(value_format="avro", **mapping)
    mappers = []
    for fields in (None, value_fields(spec)):
        cache = SchemaCache(SchemaRegistryClient({"url": "http://127.0.0.1:9"}))
        cache.parsed(1, "avro", lambda: schema)
        mappers.append(build_mapper(spec, "cf", value_decoder=AvroDecoder("value", cache, fields)))
    whole, selected = mappers
    outcomes = []
    for offset, event in enumerate(EVENTS):
        record = KafkaRecord("t", 0, offset, b"k%d" % offset, payload(schema, event))
        outcomes.append(outcome(selected, record))
        assert outcomes[-1] == outcome(whole, record)
    tombstone = KafkaRecord("t", 0, 99, b"k", None)
    assert outcome(selected, tombstone) == outcome(whole, tombstone)
    if "envelope" in mapping:  # the bad ones are named as before: the table, the op, the position
        assert [type(item).__name__ for item in outcomes[:4]] == ["RowPut", "RowPut", "RowPut", "RowDelete"]
        no_before = (
            "bad: a delete event has no 'before' image, and the row key template names fields of the value"
        )
        truncate = (
            "bad: truncate of table shop.public.rows (op 't'); "
            "set envelope_options.truncate: ignore to skip truncates"
        )
        no_position = "bad: missing source position: 'source.lsn' is missing or null (op 'u')"
        assert [text for text in outcomes if isinstance(text, str)] == [
            *([no_before] if "row_key" in mapping else []),
            truncate,
            "bad: Debezium op 'u' has no 'after' image (table shop.public.rows)",
            "bad: Debezium envelope has no 'op' field",
            "bad: unknown Debezium op 'x' (expected one of c, u, d, r, t)",
            *([no_position] if "version" in mapping else []),
        ]
