"""Debezium change-event envelopes (``mapping.envelope: debezium``), for every value format.

The value decoder (JSON, Avro, Protobuf, JSON Schema) yields the envelope as a dict; this
module reads it, so one definition serves all formats. A JSON value with the schema
wrapper (``{"schema": ..., "payload": {...}}``) is unwrapped first.

* ``op`` ``c``/``u``/``r``: the ``after`` image is what the mapping writes (columns,
  flatten, row-key templates, metadata columns); a missing or null ``after`` is a bad record.
* ``op`` ``d``: a family delete; the row key comes from ``before`` (or from the Kafka key).
* ``op`` ``t``: a bad record naming the table, or skipped under ``envelope_options.truncate:
  ignore``.
* A missing ``op``, an unknown ``op``, or a value that is not an object: bad records.

Versions (``version: field:<path>``, paths into the envelope such as ``source.lsn``): the
**position** ``P`` is read from the envelope (:func:`position_of`), then banded so that
snapshot reads sort below every streamed change and a put never shares a version with a
delete at the same position:

* ``r`` (snapshot read): ``P``;
* ``d``: ``STREAM_BASE + 2P``; ``c``/``u``: ``STREAM_BASE + 2P + 1``;

with ``STREAM_BASE = 2**61`` and ``0 <= P < 2**60`` (a position outside is a bad record).
``docs/formats.md``, "Change-data-capture envelopes", explains the choice per connector.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from airflow_provider_eo.config.mapping_syntax import FieldPath
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.spark.task.mapping.cells import encode_value
from airflow_provider_eo.spark.task.mapping.paths import MISSING, lookup

#: Every streamed change's version is at least this; snapshot reads are below it.
STREAM_BASE = 1 << 61
#: Positions are ``0 <= P < POSITION_LIMIT``.
POSITION_LIMIT = 1 << 60
#: A composite position is ``file index << FILE_SHIFT | position in the file``.
FILE_SHIFT = 32
OPS = ("c", "u", "d", "r", "t")
_WRAPPER_KEYS = frozenset(("schema", "payload"))
_FILE_INDEX = re.compile(r"(\d+)$")
_SQLSERVER_LSN = re.compile(r"([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,4})")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Change:
    """One change event: ``op``, the image to write or key by, its version (None: offsets)."""

    op: str
    image: dict[str, Any] | None
    envelope: dict[str, Any]
    version: int | None


def _integer(value: Any, name: str) -> int:
    """An int position from an int, a datetime (epoch ms), decimal text or a SQL Server LSN;
    ``name`` is the quoted path, for messages."""
    if isinstance(value, bool):
        raise BadRecord(f"source position {name} is a boolean, not a log position")
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        return (moment - _EPOCH) // dt.timedelta(milliseconds=1)
    if isinstance(value, str):
        if value.isdecimal():
            return int(value)
        match = _SQLSERVER_LSN.fullmatch(value)
        if match:  # SQL Server LSN "vlf:block:slot" in hex
            vlf, block, slot = (int(part, 16) for part in match.groups())
            return vlf << 48 | block << 16 | slot
    raise BadRecord(
        f"source position {name} is not an integer, decimal text or an LSN "
        f"(got {type(value).__name__} {value!r})"
    )


def position_of(envelope: Any, paths: tuple[FieldPath, ...], op: str) -> int:
    """The log position ``P`` of an event: one path's value, or ``file index << 32 | pos`` for
    two (a binlog file name's numeric suffix, or an int, then the position inside it).
    BadRecord when a path is missing or null, or the position is outside ``0 <= P < 2**60``."""
    values = []
    for path in paths:
        value = lookup(envelope, path)
        if value is None or value is MISSING:
            raise BadRecord(f"missing source position: {'.'.join(path)!r} is missing or null (op {op!r})")
        values.append(value)
    names = ["'" + ".".join(path) + "'" for path in paths]
    if len(values) == 1:
        position = _integer(values[0], names[0])
    else:
        first, second = values
        match = _FILE_INDEX.search(first) if isinstance(first, str) else None
        index = int(match.group(1)) if match else _integer(first, names[0])
        offset = _integer(second, names[1])
        if not 0 <= offset < 1 << FILE_SHIFT:
            raise BadRecord(f"source position {names[1]} is {offset}, outside 0..{(1 << FILE_SHIFT) - 1}")
        position = index << FILE_SHIFT | offset
    if not 0 <= position < POSITION_LIMIT:
        raise BadRecord(f"source position {'+'.join(names)} is {position}, outside 0..{POSITION_LIMIT - 1}")
    return position


def banded_version(op: str, position: int) -> int:
    """The cell version of an event at ``position`` (module docstring)."""
    if op == "r":
        return position
    return STREAM_BASE + 2 * position + (0 if op == "d" else 1)


def _table(envelope: dict[str, Any]) -> str:
    """``db.schema.table`` from ``source`` (the parts it has), for messages."""
    source = envelope.get("source")
    if not isinstance(source, dict):
        return "<no source>"
    parts = [source.get(name) for name in ("db", "schema", "table", "collection")]
    return ".".join(str(part) for part in parts if part) or "<unnamed>"


class DebeziumEnvelope:
    """Reads change events; ``positions`` are the version paths (None: offset versions)."""

    def __init__(self, positions: tuple[FieldPath, ...] | None, truncate: str) -> None:
        self.positions = positions
        self.ignore_truncate = truncate == "ignore"

    @staticmethod
    def unwrap(value: Any) -> Any:
        """The envelope inside a JSON schema wrapper, or ``value`` as it is."""
        if isinstance(value, dict) and value.keys() == _WRAPPER_KEYS:
            return value["payload"]
        return value

    def change(self, value: Any) -> Change | None:
        """The change ``value`` (a decoded, unwrapped envelope) holds; None for a truncate that
        is ignored. Raises BadRecord for the inputs the module docstring names."""
        if not isinstance(value, dict):
            raise BadRecord(
                "value is not a Debezium envelope (an object with op, before, after, source), "
                f"got {type(value).__name__}"
            )
        op = value.get("op")
        if op is None:
            raise BadRecord("Debezium envelope has no 'op' field")
        if op not in OPS:
            raise BadRecord(f"unknown Debezium op {op!r} (expected one of c, u, d, r, t)")
        if op == "t":
            if self.ignore_truncate:
                return None
            raise BadRecord(
                f"truncate of table {_table(value)} (op 't'); "
                "set envelope_options.truncate: ignore to skip truncates"
            )
        image = value.get("before" if op == "d" else "after")
        if op != "d" and not isinstance(image, dict):
            raise BadRecord(f"Debezium op {op!r} has no 'after' image (table {_table(value)})")
        version = None
        if self.positions is not None:
            version = banded_version(op, position_of(value, self.positions, op))
        return Change(op, image if isinstance(image, dict) else None, value, version)


class EnvelopeColumns:
    """Envelope metadata cells (``metadata_columns`` names ``op``, ``source``, ``source.<path>``):
    ``op`` as UTF-8, ``source`` as compact JSON, a field of it encoded as a cell value; a
    field the event lacks writes no cell. Written after the image's cells."""

    def __init__(self, family: bytes, columns: dict[str, str]) -> None:
        self.columns = [
            (family + b":" + qualifier.encode("utf-8"), tuple(name.split(".")))
            for name, qualifier in columns.items()
        ]

    def add_cells(self, envelope: dict[str, Any], cells: dict[bytes, bytes]) -> None:
        """Put the event's envelope metadata cells into ``cells``."""
        for column, path in self.columns:
            value = lookup(envelope, path)
            if value is not MISSING:
                cells[column] = encode_value(value)
