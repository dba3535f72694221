"""Kafka record -> HBase row mutation.

Default JSON mapping (``JsonMapping``):

* the value must be a UTF-8 JSON object; every top-level field becomes the
  column ``family:field``;
* cell value encoding: a JSON string is stored as its UTF-8 bytes (no quotes);
  every other JSON value (number, true/false, null, array, object) is stored as
  its compact JSON text (``separators=(",", ":")``, non-ASCII kept as UTF-8),
  e.g. ``42`` -> ``b"42"``, ``true`` -> ``b"true"``, ``{"a": 1}`` -> ``b'{"a":1}'``;
* row key: the Kafka key bytes as-is (default), or a template over top-level
  fields such as ``"{user_id}:{region}"`` (each field encoded like a cell value);
* a null value (tombstone) deletes the row's family as of the record's version.
  A tombstone needs the Kafka key: with a template row key it is a bad record.

A user function ``"pkg.module:function"`` may replace the value mapping
(``FunctionMapping``): it is called with the :class:`KafkaRecord` and returns a
dict of cells (``qualifier`` or ``family:qualifier`` -> str/bytes/JSON value,
encoded as above) or ``None`` to delete the row. The row key comes from the
Kafka key, or from the template applied to the returned dict.

Every problem with a record raises :class:`BadRecord` with a human reason, among them
what HBase would refuse forever: a row key longer than 32,767 bytes, or a cell larger
than ``hbase.keyvalue_maxsize`` (row, family, qualifier and value, as HBase counts it).
"""

from __future__ import annotations

import importlib
import json
import math
import string
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from airflow_provider_eo.config.size_limits import KEYVALUE_OVERHEAD, MAX_ROW_BYTES
from airflow_provider_eo.config.specs import HBASE_KEYVALUE_MAXSIZE
from airflow_provider_eo.errors import RecordError
from airflow_provider_eo.spark.records import KafkaRecord, RowDelete, RowMutation, RowPut


class BadRecord(RecordError):
    """A record that cannot be mapped; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_compact_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _compact_json(value: Any) -> bytes:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)`` in UTF-8
    (one encoder for every call: ``json.dumps`` with options builds a new one each time)."""
    return _compact_encoder.encode(value).encode("utf-8")


#: Cell encoder per exact type (JSON decoders only produce these); anything else: compact JSON.
_ENCODERS: dict[type, Callable[[Any], bytes]] = {
    str: lambda value: value.encode("utf-8"),
    int: lambda value: str(value).encode(),
    float: lambda value: repr(value).encode(),  # what json.dumps writes for a finite float
    bool: lambda value: b"true" if value else b"false",
    type(None): lambda _value: b"null",
    bytes: lambda value: value,
}


def encode_value(value: Any) -> bytes:
    """Encode one JSON value as cell bytes (strings raw UTF-8, others compact JSON)."""
    return _ENCODERS.get(type(value), _compact_json)(value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"number {text} is out of range")
    return number


class RowKeyTemplate:
    """``"{a}:{b}"`` over top-level fields; fields must be plain names."""

    def __init__(self, template: str) -> None:
        self.template = template
        self.parts: list[tuple[str, str | None]] = []
        for literal, name, spec, conv in string.Formatter().parse(template):
            if name is not None and (not name or spec or conv or "." in name or "[" in name):
                raise ValueError(f"row key template {template!r}: only plain {{field}} names allowed")
            self.parts.append((literal, name))
        if not any(name for _, name in self.parts):
            raise ValueError(f"row key template {template!r} names no field")

    def render(self, fields: Mapping[str, Any]) -> bytes:
        """Row key bytes; raises BadRecord when a field is missing or null."""
        out = bytearray()
        for literal, name in self.parts:
            out += literal.encode("utf-8")
            if name is None:
                continue
            if name not in fields or fields[name] is None:
                raise BadRecord(f"row key field {name!r} is missing or null")
            out += encode_value(fields[name])
        return bytes(out)


class RecordMapper:
    """Base: size check, tombstones and row keys; subclasses map the value to cells."""

    def __init__(
        self,
        family: str,
        row_key_template: str | None = None,
        max_record_bytes: int = 1 << 20,
        max_cell_bytes: int = HBASE_KEYVALUE_MAXSIZE,
    ):
        self.family = family.encode("utf-8")
        self.template = RowKeyTemplate(row_key_template) if row_key_template else None
        self.max_record_bytes = max_record_bytes
        self.max_cell_bytes = max_cell_bytes
        self._columns: dict[str | bytes, bytes] = {}

    def map(self, record: KafkaRecord) -> RowMutation:
        """Map one record; raises BadRecord."""
        if record.size_bytes > self.max_record_bytes:
            raise BadRecord(
                f"record is {record.size_bytes} bytes, larger than max_record_bytes={self.max_record_bytes}"
            )
        fields = self.fields(record)
        if fields is None:
            if self.template is not None:
                raise BadRecord("a delete (tombstone) cannot derive its row key from the row key template")
            return RowDelete(_checked_row(self.kafka_key_row(record)), (self.family,))
        row = _checked_row(self.template.render(fields) if self.template else self.kafka_key_row(record))
        columns = self._columns
        encoders = _ENCODERS
        cells = {}
        try:
            for name, value in fields.items():
                column = columns.get(name)
                if column is None:
                    column = columns[name] = self.column(name)
                cells[column] = encoders.get(type(value), _compact_json)(value)
        except UnicodeEncodeError as exc:  # a "\ud800" escape decodes to a lone surrogate
            raise BadRecord(f"a string is not encodable as UTF-8 (lone surrogate escape?): {exc}") from None
        put = RowPut(row, cells)
        if put.size_bytes + KEYVALUE_OVERHEAD > self.max_cell_bytes:  # some cell may be too large
            self._check_cells(put)
        return put

    def _check_cells(self, put: RowPut) -> None:
        """Raise BadRecord naming the first cell larger than ``max_cell_bytes`` as HBase counts it."""
        for column, value in put.cells.items():
            size = KEYVALUE_OVERHEAD + len(put.row) + len(column) - 1 + len(value)  # no ':' stored
            if size > self.max_cell_bytes:
                name = column.decode("utf-8", "backslashreplace")
                raise BadRecord(
                    f"cell {name!r} is {size} bytes as an HBase cell (row, column and value), "
                    f"larger than hbase.keyvalue_maxsize={self.max_cell_bytes}"
                )

    def column(self, name: str | bytes) -> bytes:
        """``qualifier`` -> ``family:qualifier``; ``family:qualifier`` kept (user functions only)."""
        raw = name if isinstance(name, bytes) else name.encode("utf-8")
        return self.family + b":" + raw

    def kafka_key_row(self, record: KafkaRecord) -> bytes:
        if not record.key:
            kind = "a tombstone" if record.value is None else "the row key"
            raise BadRecord(f"record has no Kafka key, needed for {kind}")
        return record.key

    def fields(self, record: KafkaRecord) -> Mapping[str, Any] | None:
        """Top-level fields of the value, or None for a row delete."""
        raise NotImplementedError


def _checked_row(row: bytes) -> bytes:
    """``row``, or BadRecord when HBase would refuse it (longer than ``MAX_ROW_BYTES``)."""
    if len(row) > MAX_ROW_BYTES:
        raise BadRecord(f"row key is {len(row)} bytes, longer than HBase's limit of {MAX_ROW_BYTES}")
    return row


_decode_json = msgspec.json.Decoder().decode


class JsonMapping(RecordMapper):
    """The default mapping: JSON object -> one column per top-level field.

    Values are decoded by msgspec; a value msgspec refuses is decoded again by the
    standard library, which accepts exactly what it always did (lone surrogate escapes)
    and words the errors of bad records. msgspec accepts a subset of what the standard
    library accepts and decodes it to equal values.
    """

    def fields(self, record: KafkaRecord) -> Mapping[str, Any] | None:
        if record.value is None:
            return None
        try:
            value = _decode_json(record.value)
        except (msgspec.MsgspecError, ValueError):  # UnicodeDecodeError included
            return self._stdlib_fields(record.value)
        if not isinstance(value, dict):
            raise BadRecord(f"JSON value is not an object (got {type(value).__name__})")
        return value

    def _stdlib_fields(self, raw: bytes) -> Mapping[str, Any]:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadRecord(f"value is not valid UTF-8: {exc}") from None
        try:
            value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        except ValueError as exc:
            raise BadRecord(f"value is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise BadRecord(f"JSON value is not an object (got {type(value).__name__})")
        return value


class FunctionMapping(RecordMapper):
    """A user function ``record -> dict of cells | None`` (None deletes the row)."""

    def __init__(self, function_path: str, family: str, **kwargs: Any) -> None:
        super().__init__(family, **kwargs)
        self.function_path = function_path
        self.function = load_function(function_path)

    def fields(self, record: KafkaRecord) -> Mapping[str, Any] | None:
        try:
            result = self.function(record)
        except BadRecord:
            raise
        except Exception as exc:
            raise BadRecord(
                f"mapping function {self.function_path} raised {type(exc).__name__}: {exc}"
            ) from None
        if result is not None and not isinstance(result, Mapping):
            raise BadRecord(f"mapping function {self.function_path} returned {type(result).__name__}")
        return result

    def column(self, name: str | bytes) -> bytes:
        raw = name if isinstance(name, bytes) else name.encode("utf-8")
        return raw if b":" in raw else self.family + b":" + raw


def load_function(path: str) -> Callable[[KafkaRecord], Any]:
    """Import ``"pkg.module:function"``; ValueError with the path when it fails."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"mapping function {path!r} must look like 'pkg.module:function'")
    try:
        function = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import mapping function {path!r}: {exc}") from exc
    if not callable(function):
        raise ValueError(f"mapping function {path!r} is not callable")
    return function


def build_mapper(
    family: str,
    row_key_template: str | None = None,
    function: str | None = None,
    max_record_bytes: int = 1 << 20,
    max_cell_bytes: int = HBASE_KEYVALUE_MAXSIZE,
) -> RecordMapper:
    """The mapper a pipeline asks for (user function if given, else JSON)."""
    if function:
        return FunctionMapping(
            function,
            family,
            row_key_template=row_key_template,
            max_record_bytes=max_record_bytes,
            max_cell_bytes=max_cell_bytes,
        )
    return JsonMapping(
        family,
        row_key_template=row_key_template,
        max_record_bytes=max_record_bytes,
        max_cell_bytes=max_cell_bytes,
    )
