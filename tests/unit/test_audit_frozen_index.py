"""The window index answers the same however it is cut into frozen parts: against a plain
model of every expected cell, one index kept loose, frozen per segment, merged from indexes
built apart and compacted past the parts' limit; its frozen form pickles small."""

from __future__ import annotations

import pickle
import random

from airflow_provider_eo.audit.expected_writes import ExpectedCell, ExpectedDelete, ExpectedSegment
from airflow_provider_eo.audit.window_index import MAX_PARTS, WindowIndex, cell_key, versioned_key

ROWS = [f"r{i}".encode() for i in range(40)]
COLUMNS = [b"d:a", b"d:b", b"e:c"]


def segments(seed: int, count: int) -> list[ExpectedSegment]:
    chosen = random.Random(seed)
    found = []
    for number in range(count):
        cells = tuple(
            ExpectedCell(chosen.choice(ROWS), chosen.choice(COLUMNS), chosen.randrange(50), b"v", number)
            for _ in range(chosen.randrange(1, 12))
        )
        deletes = tuple(
            ExpectedDelete(chosen.choice(ROWS), chosen.choice([b"d", b"e"]), chosen.randrange(50), number)
            for _ in range(chosen.randrange(3))
        )
        found.append(ExpectedSegment(cells, deletes))
    return found


def answers(index: WindowIndex) -> tuple[list[bool], list[bool], int | None, int | None]:
    probes = [(row, column, version) for row in ROWS for column in COLUMNS for version in range(0, 52, 3)]
    expects = [index.expects(row, column, version) for row, column, version in probes]
    covers = [index.covers(ExpectedCell(row, column, version, b"", 0)) for row, column, version in probes]
    return expects, covers, index.lowest, index.highest


def model(written: list[ExpectedSegment]) -> tuple[list[bool], list[bool], int | None, int | None]:
    cells = {(c.row, c.column, c.version) for s in written for c in s.cells}
    deletes = [(d.row, d.family, d.version) for s in written for d in s.deletes]
    versions = [c.version for s in written for c in s.cells] + [version for _, _, version in deletes]
    probes = [(row, column, version) for row in ROWS for column in COLUMNS for version in range(0, 52, 3)]
    expects = [probe in cells for probe in probes]
    covers = [
        any(r == row and f == column.split(b":")[0] and v >= version for r, f, v in deletes)
        or any(r == row and c == column and v > version for r, c, v in cells)
        for row, column, version in probes
    ]
    return expects, covers, min(versions, default=None), max(versions, default=None)


def test_loose_frozen_and_merged_indexes_answer_as_the_model() -> None:
    written = segments(1, 60)
    loose, frozen, merged = WindowIndex(), WindowIndex(), WindowIndex()
    for segment in written:
        loose.add(segment)
        frozen.add(segment)
        frozen.freeze()
        apart = WindowIndex()
        apart.add(segment)
        merged.merge(apart)
    assert not loose.parts and len(merged.parts) <= MAX_PARTS and not merged.loose_entries
    assert answers(loose) == answers(frozen) == answers(merged) == model(written)


def test_a_frozen_range_index_pickles_as_arrays_and_merges_unchanged() -> None:
    written = segments(2, 30)
    index = WindowIndex()
    for segment in written:
        index.add(segment)
    index.freeze()
    shipped = pickle.loads(pickle.dumps(index))
    window = WindowIndex()
    window.merge(shipped)
    assert answers(window) == model(written)
    keys = {cell_key(c.row, c.column) for s in written for c in s.cells}
    assert len(pickle.dumps(index)) < 1000 + 24 * len(keys) + 8 * len(index.parts[0].older)


def test_a_version_displaced_by_another_parts_newer_one_is_still_expected() -> None:
    one, two = WindowIndex(), WindowIndex()
    one.add(ExpectedSegment((ExpectedCell(b"r", b"d:a", 5, b"x", 1),), ()))
    two.add(ExpectedSegment((ExpectedCell(b"r", b"d:a", 9, b"y", 2),), ()))
    window = WindowIndex()
    for _ in range(MAX_PARTS + 1):  # past the limit: the parts are compacted into one
        window.merge(one)
        window.merge(two)
    assert len(window.parts) <= MAX_PARTS
    assert window.expects(b"r", b"d:a", 5) and window.expects(b"r", b"d:a", 9)
    assert not window.expects(b"r", b"d:a", 7)
    assert versioned_key(cell_key(b"r", b"d:a"), 5) in {k for p in window.parts for k in p.older}
