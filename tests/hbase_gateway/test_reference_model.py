"""Random put/delete sequences agree with a minimal reference model of HBase cell semantics.

The model: a delete marker (family or column) at T masks every version <= T, now
and later; per column the newest ``max_versions`` versions exist; reads return
them newest first. Seeded, so every run replays the same sequences.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import happybase
import pytest

Factory = Callable[..., happybase.Table]
ROWS = [b"r0", b"r1", b"r2"]
QUALIFIERS = [b"a", b"b"]
MAX_VERSIONS = 2


class Model:
    """Reference semantics for one family ``cf``."""

    def __init__(self) -> None:
        self.cells: dict[tuple[bytes, bytes], dict[int, bytes]] = {}
        self.family_markers: dict[bytes, int] = {}
        self.column_markers: dict[tuple[bytes, bytes], int] = {}

    def masked(self, row: bytes, qualifier: bytes, ts: int) -> bool:
        return ts <= max(self.family_markers.get(row, -1), self.column_markers.get((row, qualifier), -1))

    def put(self, row: bytes, qualifier: bytes, ts: int, value: bytes) -> None:
        if not self.masked(row, qualifier, ts):
            self.cells.setdefault((row, qualifier), {})[ts] = value

    def delete(self, row: bytes, qualifier: bytes | None, ts: int) -> None:
        if qualifier is None:
            self.family_markers[row] = max(ts, self.family_markers.get(row, -1))
        else:
            self.column_markers[(row, qualifier)] = max(ts, self.column_markers.get((row, qualifier), -1))
        for (r, q), versions in self.cells.items():
            if r == row and (qualifier is None or q == qualifier):
                for old in [t for t in versions if t <= ts]:
                    del versions[old]

    def versions(self, row: bytes, qualifier: bytes) -> list[tuple[bytes, int]]:
        versions = self.cells.get((row, qualifier), {})
        newest = sorted(versions, reverse=True)[:MAX_VERSIONS]
        return [(versions[t], t) for t in newest]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_sequences_match_the_model(make_table: Factory, seed: int) -> None:
    rng = random.Random(seed)
    table = make_table(cf={"max_versions": MAX_VERSIONS})
    model = Model()
    for step in range(120):
        row = rng.choice(ROWS)
        ts = rng.randint(1, 30)
        kind = rng.random()
        if kind < 0.6:
            qualifier = rng.choice(QUALIFIERS)
            value = b"v%d" % step
            table.put(row, {b"cf:" + qualifier: value}, timestamp=ts)
            model.put(row, qualifier, ts, value)
        elif kind < 0.8:
            qualifier = rng.choice(QUALIFIERS)
            table.delete(row, columns=[b"cf:" + qualifier], timestamp=ts)
            model.delete(row, qualifier, ts)
        else:
            table.delete(row, columns=[b"cf"], timestamp=ts)
            model.delete(row, None, ts)
        if step % 10 == 9:
            for check_row in ROWS:
                for qualifier in QUALIFIERS:
                    got = table.cells(check_row, b"cf:" + qualifier, versions=5, include_timestamp=True)
                    assert got == model.versions(check_row, qualifier), (seed, step, check_row, qualifier)
    expected = {}
    for row in ROWS:
        columns = {b"cf:" + q: model.versions(row, q)[0] for q in QUALIFIERS if model.versions(row, q)}
        if columns:
            expected[row] = columns
    assert dict(table.scan(include_timestamp=True)) == expected
