"""Debezium envelopes (spark/task/mapping/envelope.py) and plain tombstones under field
versions (``tombstone_version``), without services: exact mutations, versions and reasons,
and the config rules that declare them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_eo.config.config_errors import PipelineConfigError
from airflow_provider_eo.config.loader import parse_pipelines_text
from airflow_provider_eo.config.spec_digest import mapping_view, spec_digest
from airflow_provider_eo.spark.records import KafkaRecord, RowDelete, RowPut
from airflow_provider_eo.spark.task.mapping import BadRecord
from airflow_provider_eo.spark.task.mapping.envelope import STREAM_BASE, Change, banded_version
from tests.unit.test_mapping import make_mapper

CDC = {"envelope": "debezium", "version": "field:source.lsn", "row_key": "{id}"}
SOURCE = {"db": "shop", "schema": "public", "table": "orders", "lsn": 150, "txId": 9}


def event(op: str | None, after: Any = None, before: Any = None, lsn: Any = 150, **more: Any) -> bytes:
    body: dict[str, Any] = {"before": before, "after": after, "source": {**SOURCE, "lsn": lsn}, **more}
    if op is not None:
        body["op"] = op
    return json.dumps(body).encode()


def rec(value: bytes | None, key: bytes | None = b'{"id": 1}', headers: Any = ()) -> KafkaRecord:
    return KafkaRecord("shop.public.orders", 0, 4, key, value, headers)


def test_banded_versions_order_snapshots_below_streams_and_deletes_below_puts() -> None:
    assert banded_version("r", 10**9) == 10**9
    assert banded_version("d", 150) == STREAM_BASE + 300
    assert banded_version("c", 150) == banded_version("u", 150) == STREAM_BASE + 301
    assert banded_version("r", 2**60 - 1) < banded_version("d", 0) < banded_version("c", 0)


def test_create_update_and_read_write_the_after_image_at_their_banded_version() -> None:
    mapper = make_mapper(
        **CDC, columns={"id": "id", "total": "total"}, metadata_columns={"op": "op", "source.lsn": "lsn"}
    )
    after = {"id": 1, "total": 12.5, "ignored": "x"}
    expected = {b"cf:id": b"1", b"cf:total": b"12.5", b"cf:lsn": b"150"}
    for op, version in (("c", STREAM_BASE + 301), ("u", STREAM_BASE + 301), ("r", 150)):
        assert make_mapper(**CDC, columns={"id": "id"}).map(rec(event(op, after))) == RowPut(
            b"1", {b"cf:id": b"1"}, version
        )
        assert mapper.map(rec(event(op, after))) == RowPut(b"1", {**expected, b"cf:op": op.encode()}, version)


def test_whole_source_block_as_a_metadata_column_and_top_level_columns_of_after() -> None:
    mapper = make_mapper(envelope="debezium", metadata_columns={"source": "src"})
    put = mapper.map(rec(event("c", {"id": 1, "name": "Zoë"}), key=b"k"))
    assert put == RowPut(
        b"k",
        {
            b"cf:id": b"1",
            b"cf:name": "Zoë".encode(),
            b"cf:src": json.dumps(SOURCE, separators=(",", ":")).encode(),
        },
    )


def test_delete_is_a_family_delete_keyed_by_before_or_the_key() -> None:
    assert make_mapper(**CDC).map(rec(event("d", before={"id": 3}, lsn=200))) == RowDelete(
        b"3", (b"cf",), STREAM_BASE + 400
    )
    by_key = make_mapper(
        envelope="debezium", version="field:source.lsn", key_format="json", row_key="{key.id}"
    )
    assert by_key.map(rec(event("d", before=None, lsn=200))) == RowDelete(b"1", (b"cf",), STREAM_BASE + 400)
    with pytest.raises(BadRecord, match="delete event has no 'before' image"):
        make_mapper(**CDC).map(rec(event("d", before=None)))


def test_tombstones_and_ignored_truncates_map_to_nothing() -> None:
    assert make_mapper(**CDC).map(rec(None)) is None
    assert make_mapper(**CDC).map(rec(b'{"schema": {"type": "struct"}, "payload": null}')) is None
    ignoring = make_mapper(**CDC, truncate="ignore")
    assert ignoring.map(rec(event("t"))) is None


def test_the_json_schema_wrapper_is_unwrapped() -> None:
    payload = json.loads(event("u", {"id": 2, "v": "x"}))
    wrapped = json.dumps({"schema": {"type": "struct"}, "payload": payload}).encode()
    assert make_mapper(**CDC).map(rec(wrapped)) == RowPut(
        b"2", {b"cf:id": b"2", b"cf:v": b"x"}, STREAM_BASE + 301
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (event(None, {"id": 1}), "Debezium envelope has no 'op' field"),
        (event("x", {"id": 1}), "unknown Debezium op 'x' (expected one of c, u, d, r, t)"),
        (event("u", None), "Debezium op 'u' has no 'after' image (table shop.public.orders)"),
        (event("c", None), "Debezium op 'c' has no 'after' image (table shop.public.orders)"),
        (event("u", {"id": 1}, lsn=None),
         "missing source position: 'source.lsn' is missing or null (op 'u')"),
        (event("d", before={"id": 1}, lsn=None),
         "missing source position: 'source.lsn' is missing or null (op 'd')"),
        (event("u", {"id": 1}, lsn=2**60),
         f"source position 'source.lsn' is {2**60}, outside 0..{2**60 - 1}"),
        (event("u", {"id": 1}, lsn=True), "source position 'source.lsn' is a boolean, not a log position"),
        (
            event("t"),
            "truncate of table shop.public.orders (op 't'); "
            "set envelope_options.truncate: ignore to skip truncates",
        ),
    ],
)  # fmt: skip
def test_bad_change_events_are_named(value: bytes, reason: str) -> None:
    with pytest.raises(BadRecord) as err:
        make_mapper(**CDC).map(rec(value))
    assert err.value.reason == reason
    with pytest.raises(BadRecord) as err:
        make_mapper(**{**CDC, "value_format": "string"}).map(rec(b"c"))
    assert (
        err.value.reason
        == "value is not a Debezium envelope (an object with op, before, after, source), got str"
    )


@pytest.mark.parametrize(
    ("version", "source", "position"),
    [
        ("field:source.lsn", {"lsn": "24023128"}, 24023128),  # decimal text (Oracle's scn too)
        ("field:source.commit_lsn", {"commit_lsn": "00000027:00000758:0005"}, 0x27 << 48 | 0x758 << 16 | 5),
        ("field:source.file+source.pos", {"file": "mysql-bin.000003", "pos": 154}, 3 << 32 | 154),
        ("field:source.ts_ms", {"ts_ms": 1_700_000_000_000}, 1_700_000_000_000),
    ],
)
def test_positions_per_connector(version: str, source: dict[str, Any], position: int) -> None:
    mapper = make_mapper(envelope="debezium", version=version, row_key="{id}")
    value = json.dumps({"op": "u", "after": {"id": 1}, "source": source}).encode()
    assert mapper.map(rec(value)) == RowPut(b"1", {b"cf:id": b"1"}, STREAM_BASE + 2 * position + 1)


def test_offset_versions_under_an_envelope_delete_at_the_segment_version() -> None:
    mapper = make_mapper(envelope="debezium", row_key="{id}")
    assert mapper.map(rec(event("d", before={"id": 1}))) == RowDelete(b"1", (b"cf",))
    assert mapper.map(rec(event("u", {"id": 1}))) == RowPut(b"1", {b"cf:id": b"1"})


def seen_by_function(record: KafkaRecord, change: Change) -> dict[str, Any] | None:
    """A user function under an envelope (tests.unit.test_debezium_envelope:seen_by_function)."""
    image = change.image or {}
    if image.get("skip"):
        return None
    return {"id": image["id"], "doubled": image["n"] * 2, "op": change.op, "partition": record.partition}


def test_a_user_function_maps_changes_and_the_envelope_keeps_deletes_and_versions() -> None:
    mapper = make_mapper(**CDC, function="tests.unit.test_debezium_envelope:seen_by_function")
    assert mapper.map(rec(event("u", {"id": 1, "n": 4}))) == RowPut(
        b"1", {b"cf:id": b"1", b"cf:doubled": b"8", b"cf:op": b"u", b"cf:partition": b"0"}, STREAM_BASE + 301
    )
    assert mapper.map(rec(event("d", before={"id": 1, "n": 4}, lsn=7))) == RowDelete(
        b"1", (b"cf",), STREAM_BASE + 14
    )
    assert mapper.map(rec(event("c", {"id": 1, "n": 4, "skip": True}))) is None
    assert mapper.map(rec(None)) is None


def test_plain_tombstones_take_their_version_from_a_header_or_the_key() -> None:
    by_header = make_mapper(version="field:ts", tombstone_version="header:ver")
    assert by_header.map(rec(None, key=b"k", headers=(("ver", b"41"),))) == RowDelete(b"k", (b"cf",), 41)
    with pytest.raises(BadRecord, match=r"^tombstone version header 'ver' is missing or not decimal text$"):
        by_header.map(rec(None, key=b"k", headers=(("ver", b"x"),)))
    by_key = make_mapper(version="field:ts", key_format="json", tombstone_version="key:v")
    assert by_key.map(rec(None, key=b'{"v": 12}')) == RowDelete(b'{"v": 12}', (b"cf",), 12)
    with pytest.raises(BadRecord, match=r"^tombstone version field 'key\.v' is missing or null$"):
        by_key.map(rec(None, key=b'{"w": 12}'))


def _spec(mapping: str) -> Any:
    text = (
        "pipelines:\n  - name: p\n    topics: [t]\n    hbase: {table: t, column_family: d}\n"
        f"    mapping: {mapping}\n"
    )
    return parse_pipelines_text(text, "p.yaml")["p"]


def test_config_declares_envelopes_and_the_digest_covers_them() -> None:
    plain = _spec("{value_format: avro}")
    cdc = _spec(
        "{value_format: avro, envelope: debezium, version: 'field:source.file+source.pos', "
        "envelope_options: {truncate: ignore}, metadata_columns: {op: op, source.lsn: lsn, offset: o}}"
    )
    assert (cdc.mapping.envelope, cdc.mapping.truncate) == ("debezium", "ignore")
    assert cdc.mapping.value_paths == ("source.file", "source.pos")
    assert spec_digest(plain) != spec_digest(_spec("{value_format: avro, envelope: debezium}"))
    assert spec_digest(_spec("{value_format: avro, envelope: debezium}")) != spec_digest(
        _spec("{value_format: avro, envelope: debezium, envelope_options: {truncate: ignore}}")
    )
    assert "envelope" not in mapping_view(plain)["mapping"]  # digests recorded before envelopes stay
    assert _spec("{row_key: '{a.b}', envelope: debezium}").mapping.value_paths == ("after.a.b",)


@pytest.mark.parametrize(
    ("mapping", "problem"),
    [
        ("{envelope: avro}", "field 'mapping.envelope': must be one of none, debezium, got 'avro'"),
        ("{envelope_options: {truncate: ignore}}",
         "field 'mapping.envelope_options': applies with 'envelope: debezium' only"),
        ("{envelope: debezium, envelope_options: {truncate: drop}}",
         "must be one of fail, ignore, got 'drop'"),
        ("{version: 'field:a+b'}", "a composite version 'field:a+b' needs 'envelope: debezium'"),
        ("{metadata_columns: {op: op}}",
         "is not Kafka metadata (allowed: topic, partition, offset, timestamp, headers)"),
        ("{tombstone_version: 'header:v'}", "applies with 'version: field:<path>' only"),
        ("{version: 'field:ts', tombstone_version: 'row:v'}",
         "must be 'header:<name>' or 'key:<dotted.path>'"),
        ("{version: 'field:ts', tombstone_version: 'key:v'}",
         "names a field of the Kafka key but key_format 'bytes' has no fields"),
        ("{envelope: debezium, version: 'field:ts', tombstone_version: 'header:v'}",
         "does not apply with an envelope"),
    ],
)  # fmt: skip
def test_config_errors_name_the_field(mapping: str, problem: str) -> None:
    with pytest.raises(PipelineConfigError) as err:
        _spec(mapping)
    assert problem in str(err.value)
