"""Kafka metadata as cells (``mapping.metadata_columns``).

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
from collections.abc import Callable
from typing import Any

from airflow_provider_eo.spark.records import KafkaRecord
from airflow_provider_eo.spark.task.mapping.cells import compact_json


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
