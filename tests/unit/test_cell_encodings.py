"""Exact cell bytes of every decoded value type (logical types included) and the plain decoders."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest

from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.decoder_factory import build_decoder
from airflow_provider_eo.formats.plain import decode_json_key
from airflow_provider_eo.spark.records import KafkaRecord, RowPut
from airflow_provider_eo.spark.task.mapping import build_mapper, encode_value

CEST = dt.timezone(dt.timedelta(hours=2))
MOMENT = dt.datetime(2024, 5, 1, 14, 30, 0, 250_000, tzinfo=CEST)  # 12:30:00.25 UTC
ID = uuid.UUID("6F1C0B4E-8D2A-4C7B-9E3F-0A1B2C3D4E5F")


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("héllo", "héllo".encode()),
        (-17, b"-17"),
        (2**70, b"1180591620717411303424"),
        (0.1, b"0.1"),
        (1e16, b"1e+16"),
        (float("nan"), b"NaN"),
        (float("inf"), b"Infinity"),
        (float("-inf"), b"-Infinity"),
        (True, b"true"),
        (None, b"null"),
        (b"\x00\xff", b"\x00\xff"),
        (MOMENT, b"2024-05-01T12:30:00.250000Z"),
        (dt.datetime(2024, 5, 1, 12, 30), b"2024-05-01T12:30:00.000000Z"),  # naive: UTC
        (dt.datetime(1, 1, 1, tzinfo=dt.UTC), b"0001-01-01T00:00:00.000000Z"),
        (dt.date(2024, 2, 29), b"2024-02-29"),
        (dt.date(999, 1, 2), b"0999-01-02"),
        (dt.time(7, 5, 3, 120), b"07:05:03.000120"),
        (dt.time(23, 59, tzinfo=CEST), b"23:59:00.000000"),
        (Decimal("1.20"), b"1.20"),
        (Decimal("-0.000001"), b"-0.000001"),
        (Decimal("1E+3"), b"1000"),
        (Decimal("1E-7"), b"0.0000001"),
        (Decimal("12345678901234567890.123456789"), b"12345678901234567890.123456789"),
        (ID, b"6f1c0b4e-8d2a-4c7b-9e3f-0a1b2c3d4e5f"),
        ({"k": "ü", "n": [1, None]}, '{"k":"ü","n":[1,null]}'.encode()),
    ],
)
def test_cell_bytes_of_each_type(value: Any, cell: bytes) -> None:
    assert encode_value(value) == cell


def test_inside_json_cells_bytes_are_base64_and_logical_types_their_strings() -> None:
    value = {
        "b": b"\xff\x00",
        "t": MOMENT,
        "d": dt.date(2024, 2, 29),
        "tm": dt.time(7, 5, 3),
        "dec": Decimal("1.20"),
        "u": ID,
        "f": [1.5, float("nan"), float("-inf")],
    }
    assert encode_value(value) == (
        b'{"b":"/wA=","t":"2024-05-01T12:30:00.250000Z","d":"2024-02-29","tm":"07:05:03.000000",'
        b'"dec":"1.20","u":"6f1c0b4e-8d2a-4c7b-9e3f-0a1b2c3d4e5f","f":[1.5,"NaN","-Infinity"]}'
    )


def test_a_value_without_an_encoding_is_a_bad_record() -> None:
    with pytest.raises(BadRecord) as err:
        encode_value([object()])
    assert err.value.reason == "cannot encode a cell: a object value has no cell encoding"


def decoded(value: dict[str, Any]) -> Any:
    """A value decoder returning ``value`` (what a registry format's decoder returns)."""
    return lambda _data: value


def test_mapper_writes_logical_types_with_their_encodings() -> None:
    value = {"at": MOMENT, "day": dt.date(2024, 2, 29), "amount": Decimal("10.50"), "id": ID, "raw": b"\x01"}
    spec = MappingSpec(row_key="{id}", version="field:at")
    mapper = build_mapper(spec, "cf", value_decoder=decoded(value))
    put = mapper.map(KafkaRecord("t", 0, 0, None, b"payload"))
    assert put == RowPut(
        b"6f1c0b4e-8d2a-4c7b-9e3f-0a1b2c3d4e5f",
        {
            b"cf:at": b"2024-05-01T12:30:00.250000Z",
            b"cf:day": b"2024-02-29",
            b"cf:amount": b"10.50",
            b"cf:id": b"6f1c0b4e-8d2a-4c7b-9e3f-0a1b2c3d4e5f",
            b"cf:raw": b"\x01",
        },
        1_714_566_600_250,  # the datetime version in epoch milliseconds
    )


def test_a_datetime_beyond_utc_range_is_a_bad_record() -> None:
    early = dt.datetime(1, 1, 1, tzinfo=CEST)  # 0000-12-31T22:00Z does not exist
    mapper = build_mapper(MappingSpec(), "cf", value_decoder=decoded({"at": early}))
    with pytest.raises(BadRecord) as err:
        mapper.map(KafkaRecord("t", 0, 0, b"k", b"payload"))
    assert err.value.reason.startswith("a field cannot be encoded as a cell: ")


def test_plain_decoders() -> None:
    assert build_decoder("json", "value", None)(b'{"a": [1]}') == {"a": [1]}
    assert decode_json_key(b'"text"') == "text"
    assert build_decoder("json", "key", None)(b"17") == 17
    assert build_decoder("string", "key", None)("é".encode()) == "é"
    assert build_decoder("bytes", "value", None)(b"\xff") == b"\xff"
    with pytest.raises(BadRecord) as err:
        build_decoder("string", "key", None)(b"\xff")
    assert err.value.reason.startswith("key is not valid UTF-8 (format string): ")
    with pytest.raises(BadRecord) as err:
        build_decoder("json", "key", None)(b"\xff")
    assert err.value.reason.startswith("key is not valid UTF-8: ")
