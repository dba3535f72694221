"""An oracle for the visible HBase state a sequence of Kafka records must produce.

Deliberately independent of the Spark mapping code: it restates the documented
contract (docs/spark.md) so tests and the demo can check the product against it.

Contract: the default JSON mapping turns an object value into one cell per
top-level field in the pipeline's family (strings as UTF-8, every other JSON
value as its compact JSON text); a null value (tombstone) deletes the row; per
cell, the newest record (by offset within its partition) wins.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

Rows = dict[bytes, dict[bytes, bytes]]


@dataclass(frozen=True)
class ProducedRecord:
    """One record as produced: where it landed and its raw bytes."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def encode_json_value(value: object) -> bytes:
    """Cell bytes for one JSON field value (the documented encoding)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def decode_json(value: bytes) -> object:
    """Strict JSON as the contract reads it: no NaN/Infinity, no number out of float range."""
    decoded = json.loads(value.decode("utf-8"), parse_constant=_reject_constant)

    def check(node: object) -> None:
        if isinstance(node, float) and not math.isfinite(node):
            raise ValueError("number out of float range")
        for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
            check(child)

    check(decoded)
    return decoded


def is_bad_record(record: ProducedRecord) -> bool:
    """True when the default mapping must reject the record (dead letter or failure)."""
    if record.key is None:
        return True
    if record.value is None:
        return False
    try:
        decoded = decode_json(record.value)
    except (UnicodeDecodeError, ValueError):
        return True
    return not isinstance(decoded, dict)


def expected_rows(records: Iterable[ProducedRecord], family: str) -> Rows:
    """Visible HBase rows after applying ``records`` keyed by the Kafka key.

    Records are applied per partition in offset order; bad records are skipped.
    """
    rows: Rows = {}
    ordered = sorted(records, key=lambda r: (r.topic, r.partition, r.offset))
    for record in ordered:
        if is_bad_record(record):
            continue
        assert record.key is not None
        if record.value is None:
            rows.pop(record.key, None)
            continue
        cells = rows.setdefault(record.key, {})
        decoded = decode_json(record.value)
        assert isinstance(decoded, dict)
        for field, value in decoded.items():
            cells[f"{family}:{field}".encode()] = encode_json_value(value)
    return {row: cells for row, cells in rows.items() if cells}
