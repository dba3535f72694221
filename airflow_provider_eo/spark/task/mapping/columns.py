"""Which cells a decoded value becomes (``mapping.columns`` and ``mapping.flatten``).

* ``columns: null``: every top-level field ``f`` becomes the cell ``family:f``.
* ``columns: {qualifier: dotted.path}``: each path's value becomes ``family:qualifier``;
  a path missing from the record writes no cell (a present null writes ``null``).
* A flattened path whose value is an array writes ``qualifier.0``, ``qualifier.1``, ...;
  a map (object) writes ``qualifier.<key>``; each element encoded as a cell value (nested
  arrays and maps as compact JSON). An empty array or map writes no cell; any other value
  writes the one cell ``qualifier``. Cells of elements a later record no longer has stay
  in HBase (a put never deletes).

Cell values are encoded by :mod:`~airflow_provider_eo.spark.task.mapping.cells`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_eo.config.mapping_syntax import parse_path
from airflow_provider_eo.spark.task.mapping.cells import ENCODERS, encode_other, encode_value
from airflow_provider_eo.spark.task.mapping.paths import MISSING, lookup


def flatten_into(cells: dict[bytes, bytes], column: bytes, value: Any) -> None:
    """Cells of one flattened value (module docstring) under ``column``."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            cells[b"%s.%d" % (column, index)] = encode_value(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            cells[column + b"." + encode_value(key)] = encode_value(item)
    else:
        cells[column] = encode_value(value)


class TopLevelColumns:
    """``columns: null``: one cell per top-level field (``family:field``)."""

    def __init__(self, family: bytes, flatten: tuple[str, ...] = ()) -> None:
        self.family = family
        self.flatten = frozenset(flatten)
        self._columns: dict[str | bytes, bytes] = {}

    def column(self, name: str | bytes) -> bytes:
        """``qualifier`` -> ``family:qualifier``."""
        raw = name if isinstance(name, bytes) else name.encode("utf-8")
        return self.family + b":" + raw

    def cells(self, fields: Mapping[Any, Any]) -> dict[bytes, bytes]:
        """The cells of a record whose value decoded to the object ``fields``."""
        columns = self._columns
        encoders = ENCODERS
        flatten = self.flatten
        cells: dict[bytes, bytes] = {}
        for name, value in fields.items():
            column = columns.get(name)
            if column is None:
                column = columns[name] = self.column(name)
            if flatten and name in flatten:
                flatten_into(cells, column, value)
            else:
                cells[column] = encoders.get(type(value), encode_other)(value)
        return cells


class SelectedColumns:
    """``columns: {qualifier: path}``: selected and renamed fields, nested paths allowed."""

    def __init__(self, family: bytes, columns: dict[str, str], flatten: tuple[str, ...] = ()) -> None:
        self.columns = [
            (family + b":" + qualifier.encode("utf-8"), parse_path(path), path in flatten)
            for qualifier, path in columns.items()
        ]

    def cells(self, fields: Any) -> dict[bytes, bytes]:
        """The cells of a record whose value decoded to ``fields``."""
        cells: dict[bytes, bytes] = {}
        for column, path, flattened in self.columns:
            value = lookup(fields, path)
            if value is MISSING:
                continue
            if flattened:
                flatten_into(cells, column, value)
            else:
                cells[column] = encode_value(value)
        return cells
