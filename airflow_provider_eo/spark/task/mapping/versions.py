"""Cell versions from a field of the record (``mapping.version: field:<path>``).

The default version source, the offset, is applied by the segments; this one is read
per record and carried on the mutation (``RowPut.version``). Why and when:
``docs/formats.md``, "Cell versions from a field".
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from airflow_provider_eo.config.mapping_syntax import FieldPath
from airflow_provider_eo.errors import BadRecord
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
