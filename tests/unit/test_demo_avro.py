"""The Avro demo's pure parts: the sample orders (eo_devtools.demo.avro_events), the Avro
oracle (eo_devtools.demo.avro_expected_state) folded by the shared fold_rows, and the
draft pipeline's columns. Values are serialized here in the Confluent wire format with
fastavro under fixed schema ids; the registry round trip runs in the demo itself."""

from __future__ import annotations

import datetime as dt
import io
from collections import Counter, defaultdict
from collections.abc import Callable
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import fastavro
import pytest

from eo_devtools.demo.avro_events import (
    BAD_KINDS,
    SCHEMA_V1,
    SCHEMA_V2,
    UNKNOWN_SCHEMA_ID,
    order_events,
    serialized_events,
)
from eo_devtools.demo.avro_expected_state import AvroOracle, decode_wire, encode_cell, schema_id_of
from eo_devtools.demo.expected_state import ProducedRecord, expected_rows, fold_rows
from eo_devtools.demo.feeds import mapping_columns
from eo_devtools.demo.sample_events import partition_for

PIPELINES = Path(__file__).resolve().parents[2] / "dags" / "pipelines.yaml"
V1_ID, V2_ID = 101, 102
SCHEMAS = {V1_ID: fastavro.parse_schema(SCHEMA_V1), V2_ID: fastavro.parse_schema(SCHEMA_V2)}
COLUMNS = mapping_columns(PIPELINES, "demo_orders_avro")


def wire(schema_id: int) -> Callable[[dict[str, Any]], bytes]:
    def serialize(order: dict[str, Any]) -> bytes:
        payload = io.BytesIO()
        fastavro.schemaless_writer(payload, SCHEMAS[schema_id], order)
        return b"\x00" + schema_id.to_bytes(4, "big") + payload.getvalue()

    return serialize


def record(offset: int, key: bytes | None, value: bytes | None, partition: int = 0) -> ProducedRecord:
    return ProducedRecord("orders", partition, offset, key, value)


def order(seq: int, **extra: Any) -> dict[str, Any]:
    return {
        "order_id": "o1",
        "seq": seq,
        "customer": {"id": "cust-007", "country": "FR"},
        "amount": Decimal("12.50"),
        "placed_at": dt.datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=dt.UTC),
        "status": "paid",
        **extra,
    }


def test_the_demo_columns_name_fields_of_v1_or_v2_only() -> None:
    def paths(fields: list[dict[str, Any]], prefix: str = "") -> set[str]:
        found = set()
        for f in fields:
            found.add(prefix + f["name"])
            if isinstance(f["type"], dict) and f["type"].get("type") == "record":
                found |= paths(f["type"]["fields"], f"{prefix}{f['name']}.")
        return found

    assert COLUMNS is not None
    known = paths(SCHEMA_V1["fields"]) | paths(SCHEMA_V2["fields"])
    assert set(COLUMNS.values()) <= known
    assert {"customer.id", "amount", "placed_at", "coupon", "channel"} <= set(COLUMNS.values())


def test_v2_reads_v1_data_backward_compatible() -> None:
    payload = wire(V1_ID)(order(1, coupon="SPRING"))[5:]
    read = fastavro.schemaless_reader(io.BytesIO(payload), SCHEMAS[V1_ID], SCHEMAS[V2_ID])
    assert read == order(1, channel="web")


def test_order_events_interleave_versions_per_partition_with_updates_tombstones_and_bad_records() -> None:
    events = list(order_events(3000))
    assert events == list(order_events(3000))  # seeded
    kinds = Counter(e.kind for e in events)
    assert set(kinds) == {"v1", "v2", "tombstone", *BAD_KINDS}
    assert min(kinds[k] for k in BAD_KINDS) >= 10 and kinds["tombstone"] >= 60
    per_partition: dict[int, list[str]] = defaultdict(list)
    for e in events:
        if e.kind in ("v1", "v2"):
            per_partition[partition_for(e.key, 4)].append(e.kind)
    assert sorted(per_partition) == [0, 1, 2, 3]
    for versions in per_partition.values():  # interleaved: the version changes often in every partition
        assert sum(a != b for a, b in pairwise(versions)) >= 100
    updates = Counter(e.key for e in events if e.kind in ("v1", "v2"))
    assert len(updates) == 40 and min(updates.values()) >= 2


def test_serialized_events_are_good_exactly_for_v1_v2_and_tombstones() -> None:
    events = list(order_events(600))
    pairs = list(serialized_events(iter(events), wire(V1_ID), wire(V2_ID)))
    oracle = AvroOracle("d", COLUMNS, SCHEMAS)
    records = [record(i, key, value) for i, (key, value) in enumerate(pairs)]
    assert [oracle.is_bad(r) for r in records] == [e.kind in BAD_KINDS for e in events]
    ids = [schema_id_of(value) for _, value in pairs]
    expected_ids = {"v1": V1_ID, "v2": V2_ID, "unknown_id": UNKNOWN_SCHEMA_ID, "tombstone": None}
    assert ids == [expected_ids.get(e.kind, V1_ID if e.kind == "truncated" else None) for e in events]


def test_decode_wire_names_why_a_value_is_bad() -> None:
    good = wire(V1_ID)(order(1, coupon="NONE"))
    assert decode_wire(good, SCHEMAS) == order(1, coupon="NONE")
    unknown = b"\x00" + UNKNOWN_SCHEMA_ID.to_bytes(4, "big") + good[5:]
    for value, reason in (
        (b'{"order_id": "o1"}', "no magic byte"),
        (b"\x00\x00", "no magic byte"),
        (unknown, f"schema id {UNKNOWN_SCHEMA_ID} unknown to the registry"),
        (good[:8], f"payload does not decode with schema id {V1_ID}"),
    ):
        with pytest.raises(ValueError, match=reason):
            decode_wire(value, SCHEMAS)


def test_cells_follow_the_documented_encodings_for_both_versions() -> None:
    oracle = AvroOracle("d", COLUMNS, SCHEMAS)
    common = {
        b"d:order_id": b"o1",
        b"d:seq": b"7",
        b"d:customer_id": b"cust-007",
        b"d:country": b"FR",
        b"d:amount": b"12.50",
        b"d:placed_at": b"2026-01-01T00:00:00.123000Z",
        b"d:status": b"paid",
    }
    v1 = record(0, b"o1", wire(V1_ID)(order(7, coupon="SPRING")))
    v2 = record(1, b"o1", wire(V2_ID)(order(7, channel="app")))
    assert oracle.cells(v1) == {**common, b"d:coupon": b"SPRING"}
    assert oracle.cells(v2) == {**common, b"d:channel": b"app"}


def test_encode_cell() -> None:
    assert encode_cell(Decimal("0.00")) == b"0.00"
    assert encode_cell(Decimal("1E+2")) == b"100"
    assert encode_cell(Decimal(5).scaleb(-2)) == b"0.05"
    assert encode_cell(-42) == b"-42"
    assert encode_cell("é") == "é".encode()
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert encode_cell(dt.datetime(2026, 3, 1, 2, 0, 0, 5, tzinfo=plus_two)) == b"2026-03-01T00:00:00.000005Z"
    for unsupported in (True, 1.5, dt.datetime(2026, 1, 1), b"raw"):
        with pytest.raises(ValueError, match="no encoding"):
            encode_cell(unsupported)


def test_fold_rows_applies_avro_records_per_partition_in_offset_order() -> None:
    oracle = AvroOracle("d", {"seq": "seq", "coupon": "coupon", "channel": "channel"}, SCHEMAS)
    v1, v2 = wire(V1_ID), wire(V2_ID)
    records = [
        record(3, b"o1", v2(order(3, channel="app"))),  # out of order: folded by offset
        record(0, b"o1", v1(order(0, coupon="SPRING"))),
        record(1, b"o2", v1(order(1, coupon="NONE"))),
        record(2, b"o2", None),  # tombstone
        record(4, b"o1", b"\x00" + UNKNOWN_SCHEMA_ID.to_bytes(4, "big") + v1(order(4, coupon="X"))[5:]),
        record(5, None, v1(order(5, coupon="Y"))),  # keyless
        record(0, b"o3", v2(order(9, channel="store")), partition=1),
    ]
    assert fold_rows(records, oracle) == {
        b"o1": {b"d:seq": b"3", b"d:coupon": b"SPRING", b"d:channel": b"app"},  # v1's coupon stays
        b"o3": {b"d:seq": b"9", b"d:channel": b"store"},
    }


def test_the_json_oracle_folds_as_before() -> None:
    records = [
        record(0, b"u1", b'{"a": "x", "n": 1}'),
        record(1, b"u1", b'{"n": [1, 2]}'),
        record(2, b"u2", b"{not json"),
        record(3, b"u3", b'{"a": "y"}'),
        record(4, b"u3", None),
    ]
    assert expected_rows(records, "d") == {b"u1": {b"d:a": b"x", b"d:n": b"[1,2]"}}
