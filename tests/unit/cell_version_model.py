"""Reference models for the cell-version tests (unit, and integration against real HBase).

* :class:`HBaseVersionModel`: HBase's visible-state semantics for what the writer
  sends (puts at a timestamp; family deletes masking every version <= their ts;
  at equal ts a delete masks a put; the same cell and ts written twice: last wins).
* :func:`expected_state`: "last record per cell wins, a tombstone deletes earlier".
* :func:`expected_field_state`: "per cell the highest field version wins".
* :func:`random_history` / :func:`random_split`: property-test generators.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable

from airflow_provider_eo.spark.hbase_sink.segments import Segment, WriteCall
from airflow_provider_eo.spark.records import RowDelete, RowMutation, RowPut

FAMILY = b"cf"
State = dict[bytes, dict[bytes, bytes]]  # row -> column -> value


class HBaseVersionModel:
    """Multi-version cells plus family delete markers, like one HBase table."""

    def __init__(self) -> None:
        self.versions: dict[tuple[bytes, bytes], dict[int, bytes]] = {}
        self.family_deletes: dict[tuple[bytes, bytes], int] = {}

    def apply(self, segment: Segment) -> None:
        """The segment's ``mutateRowsTs`` calls (:meth:`Segment.calls`), in order."""
        self.apply_calls(segment.calls())

    def apply_calls(self, calls: Iterable[WriteCall]) -> None:
        """``mutateRowsTs`` calls, in order."""
        for call in calls:
            ts = call.timestamp
            for row, families in call.deletes.items():
                for family in families:
                    key = (row, family)
                    self.family_deletes[key] = max(self.family_deletes.get(key, -1), ts)
            for row, cells in call.puts.items():
                for column, value in cells.items():
                    self.versions.setdefault((row, column), {})[ts] = value

    def visible(self) -> State:
        """What a ``get`` returns: per cell the newest version not masked by a delete."""
        state: State = {}
        for (row, column), versions in self.versions.items():
            masked_upto = self.family_deletes.get((row, column.split(b":", 1)[0]), -1)
            live = [ts for ts in versions if ts > masked_upto]
            if live:
                state.setdefault(row, {})[column] = versions[max(live)]
        return state


def expected_state(history: Iterable[tuple[int, RowMutation | None]]) -> State:
    """Replay records in offset order: the last record per cell wins, a tombstone deletes earlier."""
    state: State = {}
    for _, mutation in sorted(history, key=lambda item: item[0]):
        if isinstance(mutation, RowDelete):
            state.pop(mutation.row, None)
        elif isinstance(mutation, RowPut) and mutation.cells:
            state.setdefault(mutation.row, {}).update(mutation.cells)
    return state


def expected_field_state(history: Iterable[tuple[int, RowMutation | None]]) -> State:
    """Per cell the value of the put with the highest ``version`` (equal versions: the later offset)."""
    best: dict[tuple[bytes, bytes], tuple[int, int, bytes]] = {}
    for offset, mutation in history:
        if isinstance(mutation, RowPut) and mutation.version is not None:
            for column, value in mutation.cells.items():
                candidate = (mutation.version, offset, value)
                best[(mutation.row, column)] = max(best.get((mutation.row, column), candidate), candidate)
    state: State = {}
    for (row, column), (_, _, value) in best.items():
        state.setdefault(row, {})[column] = value
    return state


def random_field_history(
    rng: random.Random, length: int, keys: int = 3
) -> list[tuple[int, RowMutation | None]]:
    """Offset-ordered puts of 1-3 columns with distinct versions in random order, and no-ops."""
    versions = rng.sample(range(1000, 1000 + 10 * length), length)
    history: list[tuple[int, RowMutation | None]] = []
    offset = rng.randrange(0, 3)
    for i, version in enumerate(versions):
        row = b"k%d" % rng.randrange(keys)
        columns = rng.sample([b"a", b"b", b"c"], rng.randrange(1, 4))
        mutation = (
            None
            if rng.random() < 0.1
            else RowPut(row, {FAMILY + b":" + c: b"v%d" % i for c in columns}, version)
        )
        history.append((offset, mutation))
        offset += rng.choice((1, 1, 1, 2, 3))
    return history


def random_history(rng: random.Random, length: int, keys: int = 3) -> list[tuple[int, RowMutation | None]]:
    """Offset-ordered records with offset gaps: puts of 1-3 columns, tombstones, no-ops."""
    history: list[tuple[int, RowMutation | None]] = []
    offset = rng.randrange(0, 3)
    for i in range(length):
        row = b"k%d" % rng.randrange(keys)
        draw = rng.random()
        mutation: RowMutation | None
        if draw < 0.25:
            mutation = RowDelete(row, (FAMILY,))
        elif draw < 0.3:
            mutation = None  # e.g. a dead-lettered record
        else:
            columns = rng.sample([b"a", b"b", b"c"], rng.randrange(1, 4))
            mutation = RowPut(row, {FAMILY + b":" + c: b"v%d" % i for c in columns})
        history.append((offset, mutation))
        offset += rng.choice((1, 1, 1, 2, 3))
    return history


def random_split(rng: random.Random, n: int) -> list[tuple[int, int]]:
    """Contiguous index ranges ``[i, j)`` covering ``range(n)``."""
    cuts = sorted(rng.sample(range(1, n), rng.randrange(0, min(4, n - 1) + 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    return list(itertools.pairwise(bounds))
