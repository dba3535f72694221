"""An oracle for the visible HBase state a sequence of Kafka records must produce.

Deliberately independent of the Spark mapping code: it restates the documented
contract (docs/spark.md) so tests and the demo can check the product against it.

Every format shares :func:`fold_rows`: records keyed by the Kafka key, applied per
partition in offset order; a null value (tombstone) deletes the row; per cell, the newest
record wins; a bad record changes nothing. What a format adds is a :class:`RecordOracle`:
which records are bad, and the cells of a good one.

:class:`JsonOracle` (the default JSON mapping): an object value becomes one cell per
top-level field in the pipeline's family (strings as UTF-8, every other JSON value as its
compact JSON text). ``eo_devtools.demo.avro_expected_state`` holds the Avro one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

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


class RecordOracle(Protocol):
    """What one format's mapping must do with each record (the documented contract)."""

    def is_bad(self, record: ProducedRecord) -> bool:
        """True when the mapping must reject the record (a dead letter or a failure)."""
        ...

    def cells(self, record: ProducedRecord) -> dict[bytes, bytes]:
        """``family:qualifier -> value`` of a good record that has a value (not a tombstone)."""
        ...


@dataclass(frozen=True)
class JsonOracle:
    """The default JSON mapping: a keyed record whose value is a JSON object (or a tombstone)."""

    family: str

    def is_bad(self, record: ProducedRecord) -> bool:
        """Keyless, or a value that is not strict JSON or not an object."""
        if record.key is None:
            return True
        if record.value is None:
            return False
        try:
            decoded = decode_json(record.value)
        except (UnicodeDecodeError, ValueError):
            return True
        return not isinstance(decoded, dict)

    def cells(self, record: ProducedRecord) -> dict[bytes, bytes]:
        """One cell per top-level field."""
        assert record.value is not None
        decoded = decode_json(record.value)
        assert isinstance(decoded, dict)
        return {
            f"{self.family}:{field}".encode(): encode_json_value(value) for field, value in decoded.items()
        }


def fold_rows(records: Iterable[ProducedRecord], oracle: RecordOracle) -> Rows:
    """Visible HBase rows after applying ``records`` keyed by the Kafka key.

    Records are applied per partition in offset order; bad records are skipped; a tombstone
    deletes the row; a good value's cells overwrite the row's cells of the same columns.
    """
    rows: Rows = {}
    for record in sorted(records, key=lambda r: (r.topic, r.partition, r.offset)):
        if oracle.is_bad(record):
            continue
        assert record.key is not None
        if record.value is None:
            rows.pop(record.key, None)
            continue
        rows.setdefault(record.key, {}).update(oracle.cells(record))
    return {row: cells for row, cells in rows.items() if cells}


def is_bad_record(record: ProducedRecord) -> bool:
    """True when the default JSON mapping must reject the record (dead letter or failure)."""
    return JsonOracle("").is_bad(record)


def expected_rows(records: Iterable[ProducedRecord], family: str) -> Rows:
    """Visible HBase rows the default JSON mapping makes of ``records`` (:func:`fold_rows`)."""
    return fold_rows(records, JsonOracle(family))
