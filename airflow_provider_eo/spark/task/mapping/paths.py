"""Reading a dotted field path out of a decoded record.

A path walks objects by key and arrays by decimal index (``items.0.sku``). It finds
nothing (:data:`MISSING`) when a step's key or index is absent, or when a step meets a
value that is neither an object nor an array (a null included): the mapping then
writes no cell for it, and a row key or version naming it is a bad record.
"""

from __future__ import annotations

from typing import Any, Final

from airflow_provider_eo.config.mapping_syntax import FieldPath


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: What :func:`lookup` returns when the path leads nowhere (None is a present null).
MISSING: Final[Any] = _Missing()


def lookup(record: Any, path: FieldPath) -> Any:
    """The value at ``path`` inside ``record``, or :data:`MISSING`."""
    node = record
    for segment in path:
        if isinstance(node, dict):
            node = node.get(segment, MISSING)
            if node is MISSING:
                return MISSING
        elif isinstance(node, list) and segment.isdecimal():
            index = int(segment)
            if index >= len(node):
                return MISSING
            node = node[index]
        else:
            return MISSING
    return node
