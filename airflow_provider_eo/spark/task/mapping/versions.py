"""Cell versions from a field of the record (``mapping.version: field:<path>``).

The default version source, the offset, is applied by the segments; this one is read
per record and carried on the mutation (``RowPut.version``); a tombstone's comes from
``tombstone_version`` (:class:`TombstoneVersion`). Why and when:
``docs/formats.md``, "Cell versions from a field".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from airflow_provider_eo.config.mapping_syntax import FieldPath, parse_tombstone_version
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.spark.records import KafkaRecord
from airflow_provider_eo.spark.task.mapping.paths import MISSING, lookup

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MILLISECOND = dt.timedelta(milliseconds=1)
#: The largest HBase timestamp (a Java long).
MAX_VERSION = (1 << 63) - 1


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
        return checked_version(value, f"version field {self.name!r}")


def checked_version(value: Any, name: str) -> int:
    """``value`` as a version: an int (not a bool) or a datetime (epoch ms, naive = UTC) in
    ``0..MAX_VERSION``; BadRecord naming ``name`` otherwise."""
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        value = (moment - _EPOCH) // _MILLISECOND
    elif isinstance(value, bool) or not isinstance(value, int):
        raise BadRecord(f"{name} is not an integer or a timestamp (got {type(value).__name__})")
    if not 0 <= value <= MAX_VERSION:
        raise BadRecord(f"{name} is {value}, outside 0..{MAX_VERSION}")
    return value


class TombstoneVersion:
    """``tombstone_version``: a tombstone's version under ``version: field:...``, from a header
    (its value as decimal UTF-8 text; the last header of that name) or a field of the decoded
    Kafka key. Missing, null or not an integer: BadRecord naming where it looked."""

    def __init__(self, text: str, key_decoder: Callable[[bytes], Any]) -> None:
        self.kind, where = parse_tombstone_version(text)
        self.header = where if isinstance(where, str) else ""
        self.path: FieldPath = () if isinstance(where, str) else where
        self.key_decoder = key_decoder
        self.text = text

    def of(self, record: KafkaRecord) -> int:
        """The version of the tombstone ``record``; raises BadRecord."""
        if self.kind == "header":
            values = [value for name, value in record.headers if name == self.header]
            raw = values[-1] if values else None
            text = raw.decode("utf-8", "replace") if raw is not None else ""
            if not text.isdecimal():
                raise BadRecord(f"tombstone version header {self.header!r} is missing or not decimal text")
            return checked_version(int(text), f"tombstone version header {self.header!r}")
        value = lookup(self.key_decoder(record.key), self.path) if record.key else MISSING
        name = f"tombstone version field 'key.{'.'.join(self.path)}'"
        if value is None or value is MISSING:
            raise BadRecord(f"{name} is missing or null")
        return checked_version(value, name)
