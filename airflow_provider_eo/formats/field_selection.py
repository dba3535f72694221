"""Which fields of a decoded value a consumer can reach: a selection tree built from paths.

A :data:`FieldSelection` is None, meaning *the whole value*, or a mapping from the field
names kept at that level to the selection inside each (None again: that field whole).
``{"after": None, "op": None, "source": {"lsn": None}}`` keeps ``after`` and ``op`` whole
and only ``lsn`` of ``source``. The name :data:`OTHER_FIELDS` (``"*"``) keeps every field the
mapping does not name, each with the selection it maps to (``{"op": None, "*": {}}`` keeps
``op`` whole, and every other field with nothing inside it: a record becomes ``{}``, a
scalar or an array stays whole). A decoder given a selection may leave out every field the
selection does not name, at any depth, and nothing else: what a selection names is decoded
exactly as without it. Selections apply to records (objects) only; an array, a map or a
scalar on a path is kept whole, whatever the path says below it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeAlias

#: The selection key standing for every field the selection does not name (no Avro name can
#: be ``*``; a path segment ``*`` in a mapping only ever keeps more).
OTHER_FIELDS = "*"
#: None: the whole value; a mapping: only these fields, each with its own selection.
FieldSelection: TypeAlias = "Mapping[str, FieldSelection] | None"


def selection_of(paths: Iterable[tuple[str, ...]]) -> FieldSelection:
    """The smallest selection that keeps every path (each path's node whole).

    An empty path keeps everything (None); no paths at all keep nothing (``{}``).
    """
    tree: dict[str, dict | None] = {}
    for path in paths:
        if not path:
            return None
        node: dict[str, dict | None] | None = tree
        for index, segment in enumerate(path):
            assert node is not None
            last = index == len(path) - 1
            if last:
                node[segment] = None
                break
            if segment in node and node[segment] is None:
                break  # an ancestor already kept whole
            node = node.setdefault(segment, {})
    return tree


def merged(first: FieldSelection, second: FieldSelection) -> FieldSelection:
    """The selection that keeps what either keeps."""
    if first is None or second is None:
        return None
    out: dict[str, FieldSelection] = dict(first)
    for name, inner in second.items():
        out[name] = merged(out[name], inner) if name in out else inner
    return out
