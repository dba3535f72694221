"""A finished part of the window index as sorted 64-bit arrays (no I/O).

Contract of :class:`FrozenIndex`: the same answers as the dictionaries it was built from
(:meth:`FrozenIndex.of`), in about 8 bytes per column key, version and older cell instead of
a Python object each: the newest expected version per column key and per family-delete key
(sorted ``array('Q')`` keys, ``array('q')`` versions alongside) and the versioned keys of the
older expected cells (sorted). Lookups are binary searches. :func:`merged` joins parts into
one with exactly the answers of all of them (newest = the highest of the parts', every older
version kept), so a window's parts can be compacted without changing what it expects or covers.
It pickles as raw bytes: what a Spark task returns of its range's index.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass


@dataclass(frozen=True)
class FrozenIndex:
    """Sorted keys and their newest versions; the older expected cells' versioned keys."""

    put_keys: array[int]
    put_versions: array[int]
    older: array[int]
    delete_keys: array[int]
    delete_versions: array[int]

    @classmethod
    def of(
        cls, newest_put: Mapping[int, int], older: Set[int], newest_delete: Mapping[int, int]
    ) -> FrozenIndex:
        """The part holding exactly these entries."""
        put_keys, put_versions = _sorted_pairs(newest_put)
        delete_keys, delete_versions = _sorted_pairs(newest_delete)
        return cls(put_keys, put_versions, array("Q", sorted(older)), delete_keys, delete_versions)

    @property
    def entries(self) -> int:
        """Column keys, family-delete keys and older cells held."""
        return len(self.put_keys) + len(self.older) + len(self.delete_keys)

    @property
    def nbytes(self) -> int:
        """Bytes of the part's array items (its few hundred fixed bytes aside: a window keeps
        at most ``MAX_PARTS`` parts, ``window_index``)."""
        return 8 * (2 * len(self.put_keys) + len(self.older) + 2 * len(self.delete_keys))

    def newest_put(self, column_key: int) -> int | None:
        """The newest expected version of the column, or None."""
        return _lookup(self.put_keys, self.put_versions, column_key)

    def newest_delete(self, family_key: int) -> int | None:
        """The newest family delete's version, or None."""
        return _lookup(self.delete_keys, self.delete_versions, family_key)

    def has_older(self, versioned: int) -> bool:
        """True when ``versioned`` is one of the part's older expected cells."""
        at = bisect_left(self.older, versioned)
        return at < len(self.older) and self.older[at] == versioned


def merged(parts: Sequence[FrozenIndex], versioned_key: Callable[[int, int], int]) -> FrozenIndex:
    """One part answering as ``parts`` together (see the module contract); ``versioned_key``
    keys a column's version that another part's newer one displaces."""
    put_keys, put_versions, displaced = _max_merge([(p.put_keys, p.put_versions) for p in parts])
    delete_keys, delete_versions, _ = _max_merge([(p.delete_keys, p.delete_versions) for p in parts])
    older = {versioned_key(key, version) for key, version in displaced}
    for part in parts:
        older.update(part.older)
    return FrozenIndex(put_keys, put_versions, array("Q", sorted(older)), delete_keys, delete_versions)


def _sorted_pairs(newest: Mapping[int, int]) -> tuple[array[int], array[int]]:
    keys = sorted(newest)
    return array("Q", keys), array("q", map(newest.__getitem__, keys))


def _lookup(keys: array[int], versions: array[int], key: int) -> int | None:
    at = bisect_left(keys, key)
    return versions[at] if at < len(keys) and keys[at] == key else None


def _max_merge(
    columns: Iterable[tuple[array[int], array[int]]],
) -> tuple[array[int], array[int], list[tuple[int, int]]]:
    """The sorted union of keyed versions, the highest per key; and the ``(key, version)``
    pairs a higher version of the same key displaced."""
    keys, versions = array("Q"), array("q")
    displaced: list[tuple[int, int]] = []
    for key, version in heapq.merge(*(zip(k, v, strict=True) for k, v in columns)):
        if keys and keys[-1] == key:  # the same key from another part: ascending versions
            if version != versions[-1]:
                displaced.append((key, versions[-1]))
                versions[-1] = version
        else:
            keys.append(key)
            versions.append(version)
    return keys, versions, displaced
