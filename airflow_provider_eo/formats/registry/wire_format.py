"""The Confluent wire format: what precedes the payload of a Schema Registry record.

Layout (big-endian)::

    byte 0      magic byte, always 0
    bytes 1-4   schema id (unsigned 32-bit) in the registry
    Protobuf only: the message indexes, zigzag varints: a count N, then N indexes
                   (the path of the message type in its .proto file; a single 0
                   byte stands for [0], the first top-level message)
    the rest    the Avro / Protobuf / JSON payload

Every malformation raises :class:`BadRecord` with a reason naming the part
(``"value"``/``"key"``), e.g. ``value: no Confluent wire-format magic byte (first byte 0x7b)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_eo.errors import BadRecord

MAGIC_BYTE = 0
HEADER_BYTES = 5
#: A message path deeper than this is not a real .proto file's nesting (a corrupt header).
MAX_MESSAGE_INDEXES = 64


@dataclass(frozen=True)
class WireRecord:
    """A record's schema id and where its payload starts in the original bytes."""

    schema_id: int
    payload_start: int


def parse_header(data: bytes, part: str) -> WireRecord:
    """Magic byte and schema id of ``data``; raises BadRecord when the framing is missing."""
    if not data:
        raise BadRecord(f"{part}: empty, no Confluent wire-format header")
    first = data[0]
    if first != MAGIC_BYTE:
        raise BadRecord(f"{part}: no Confluent wire-format magic byte (first byte 0x{first:02x})")
    if len(data) < HEADER_BYTES:
        raise BadRecord(
            f"{part}: {len(data)} bytes, shorter than the Confluent wire-format header "
            f"(magic byte and 4-byte schema id)"
        )
    return WireRecord(int.from_bytes(data[1:HEADER_BYTES], "big"), HEADER_BYTES)


def schema_id_of(data: bytes, part: str) -> int:
    """The schema id of ``data`` (the payload starts at ``HEADER_BYTES``): the per-record fast
    path of :func:`parse_header`, with the same BadRecord reasons."""
    if len(data) >= HEADER_BYTES and data[0] == MAGIC_BYTE:
        return int.from_bytes(data[1:HEADER_BYTES], "big")
    return parse_header(data, part).schema_id


def read_message_indexes(data: bytes, start: int, part: str, schema_id: int) -> tuple[list[int], int]:
    """The Protobuf message indexes at ``start`` and the offset of the payload after them.

    Raises BadRecord (naming the schema id) when the varints are truncated or absurd.
    """
    count, pos = _read_zigzag(data, start, part, schema_id)
    if count == 0:
        return [0], pos
    if count < 0 or count > MAX_MESSAGE_INDEXES:
        raise BadRecord(f"{part}: protobuf schema id {schema_id}: invalid message index count {count}")
    indexes = []
    for _ in range(count):
        index, pos = _read_zigzag(data, pos, part, schema_id)
        if index < 0:
            raise BadRecord(f"{part}: protobuf schema id {schema_id}: negative message index {index}")
        indexes.append(index)
    return indexes, pos


def _read_zigzag(data: bytes, pos: int, part: str, schema_id: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise BadRecord(f"{part}: protobuf schema id {schema_id}: message indexes are truncated")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > 63:
            raise BadRecord(f"{part}: protobuf schema id {schema_id}: a message index varint is too long")
