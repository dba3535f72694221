"""The Confluent wire format: magic byte, schema id, Protobuf message indexes, and the
reasons a malformed header gives (they name the part)."""

from __future__ import annotations

import pytest

from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.registry.wire_format import (
    WireRecord,
    parse_header,
    read_message_indexes,
    schema_id_of,
)


def test_header_gives_the_big_endian_schema_id_and_the_payload_start() -> None:
    data = b"\x00\x00\x01\x02\x03payload"
    assert (parse_header(data, "value"), schema_id_of(data, "value")) == (WireRecord(0x010203, 5), 0x010203)


@pytest.mark.parametrize(
    ("data", "part", "reason"),
    [
        (b'{"a": 1}', "value", "value: no Confluent wire-format magic byte (first byte 0x7b)"),
        (b"\x01\x00\x00\x00\x07x", "key", "key: no Confluent wire-format magic byte (first byte 0x01)"),
        (b"", "value", "value: empty, no Confluent wire-format header"),
        (
            b"\x00\x00\x07",
            "key",
            "key: 3 bytes, shorter than the Confluent wire-format header (magic byte and 4-byte schema id)",
        ),
    ],
)
def test_a_malformed_header_is_a_bad_record_naming_the_part(data: bytes, part: str, reason: str) -> None:
    reasons = []
    for parse in (parse_header, schema_id_of):  # the per-record fast path gives the same reasons
        with pytest.raises(BadRecord) as info:
            parse(data, part)
        reasons.append(info.value.reason)
    assert reasons == [reason, reason]


@pytest.mark.parametrize(
    ("encoded", "indexes"),
    [
        (b"\x00", [0]),  # the first message: one zero byte
        (b"\x02\x02", [1]),  # count 1 (zigzag 2), index 1 (zigzag 2)
        (b"\x04\x00\x02", [0, 1]),  # a nested message: count 2, [0, 1]
        (b"\x02\x96\x01", [75]),  # a multi-byte varint: zigzag 150 = 75
    ],
)
def test_message_indexes_are_zigzag_varints_after_the_schema_id(encoded: bytes, indexes: list[int]) -> None:
    data = b"\x00\x00\x00\x00\x09" + encoded + b"PAYLOAD"
    assert read_message_indexes(data, 5, "value", 9) == (indexes, 5 + len(encoded))


@pytest.mark.parametrize(
    ("encoded", "reason"),
    [
        (b"", "value: protobuf schema id 9: message indexes are truncated"),
        (b"\x04\x00", "value: protobuf schema id 9: message indexes are truncated"),
        (b"\x01", "value: protobuf schema id 9: invalid message index count -1"),
        (b"\x02\x01", "value: protobuf schema id 9: negative message index -1"),
        (b"\xff" * 10 + b"\x01", "value: protobuf schema id 9: a message index varint is too long"),
    ],
)
def test_malformed_message_indexes_name_the_schema_id(encoded: bytes, reason: str) -> None:
    with pytest.raises(BadRecord) as info:
        read_message_indexes(b"\x00\x00\x00\x00\x09" + encoded, 5, "value", 9)
    assert info.value.reason == reason
