"""Kafka metadata as cells (``mapping.metadata_columns``) and versions from a field
(``mapping.version: field:<path>``).

Metadata cells: ``topic`` -> the topic name in UTF-8; ``partition``, ``offset`` ->
decimal text; ``timestamp`` -> the record's timestamp in epoch milliseconds, decimal
text (no cell when the record has none); ``headers`` -> a compact JSON array of
``[name, value]`` pairs in record order, a value being its UTF-8 text, ``null`` for a
null header, or ``{"base64": "<standard base64>"}`` when its bytes are not valid UTF-8
(``[["trace","abc"],["bin",{"base64":"/w=="}]]``; ``[]`` without headers). They are written
after the value's cells: a field of the same qualifier is overwritten.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable
from typing import Any

from airflow_provider_eo.config.mapping_syntax import FieldPath
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.spark.mapping.cells import compact_json
from airflow_provider_eo.spark.mapping.paths import MISSING, lookup
from airflow_provider_eo.spark.records import KafkaRecord

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MILLISECOND = dt.timedelta(milliseconds=1)
#: The largest HBase timestamp (a Java long).
MAX_VERSION = (1 << 63) - 1


def _header_value(value: bytes | None) -> Any:
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def headers_cell(record: KafkaRecord) -> bytes:
    """The ``headers`` metadata cell (module docstring)."""
    return compact_json([[name, _header_value(value)] for name, value in record.headers])


_METADATA: dict[str, Callable[[KafkaRecord], bytes | None]] = {
    "topic": lambda record: record.topic.encode("utf-8"),
    "partition": lambda record: str(record.partition).encode(),
    "offset": lambda record: str(record.offset).encode(),
    "timestamp": lambda record: None if record.timestamp_ms is None else str(record.timestamp_ms).encode(),
    "headers": headers_cell,
}


class MetadataColumns:
    """``{metadata name: qualifier}`` -> the cells of one record."""

    def __init__(self, family: bytes, columns: dict[str, str]) -> None:
        self.columns = [(family + b":" + q.encode("utf-8"), _METADATA[name]) for name, q in columns.items()]

    def add_cells(self, record: KafkaRecord, cells: dict[bytes, bytes]) -> None:
        """Put the record's metadata cells into ``cells``."""
        for column, value_of in self.columns:
            value = value_of(record)
            if value is not None:
                cells[column] = value


class VersionField:
    """``version: field:<path>``: the cell version of a record from a field of its value.

    An int (not a bool) is the version as is; a datetime becomes epoch milliseconds (naive
    = UTC). Missing, null, any other type, negative or beyond a Java long: BadRecord.
    """

    def __init__(self, path: FieldPath) -> None:
        self.path = path
        self.name = ".".join(path)

    def of(self, fields: Any) -> int:
        """The version of a record whose value decoded to ``fields``; raises BadRecord."""
        value = lookup(fields, self.path)
        if value is None or value is MISSING:
            raise BadRecord(f"version field {self.name!r} is missing or null")
        if isinstance(value, dt.datetime):
            moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
            value = (moment - _EPOCH) // _MILLISECOND
        elif isinstance(value, bool) or not isinstance(value, int):
            raise BadRecord(
                f"version field {self.name!r} is not an integer or a timestamp (got {type(value).__name__})"
            )
        if not 0 <= value <= MAX_VERSION:
            raise BadRecord(f"version field {self.name!r} is {value}, outside 0..{MAX_VERSION}")
        return value
