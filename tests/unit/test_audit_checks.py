"""The audit's pure parts: expected writes recomputed with the writer's code, the cell,
offset, dead-letter and group checks, the bounded finding log, the CLI's window syntax."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from airflow_provider_eo.audit.cell_check import (
    CellCandidates,
    CellTally,
    RangeRef,
    WindowIndex,
    check_batch,
    settle,
)
from airflow_provider_eo.audit.dead_letter_check import check_dead_letters
from airflow_provider_eo.audit.expected_writes import (
    BadRecordSeen,
    ExpectedCell,
    ExpectedDelete,
    ExpectedSegment,
    ExpectedWrites,
)
from airflow_provider_eo.audit.findings import Finding, FindingKind, FindingLog, shown
from airflow_provider_eo.audit.group_check import check_group, not_auditable, stream_ends
from airflow_provider_eo.audit.hbase_view import RowsView, read_plan
from airflow_provider_eo.audit.offset_check import OffsetCounts, check_offsets, vote_counts
from airflow_provider_eo.audit.range_audit import in_window_of
from airflow_provider_eo.audit.report import AuditReport
from airflow_provider_eo.cli.audit_commands import epoch_bounds, exit_status
from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.spark.records import KafkaRecord, TaskRange
from airflow_provider_eo.spark.task.mapping import build_mapper

T = "t"
REF = RangeRef(7, T, 0)


def record(offset: int, key: str, value: bytes | None) -> KafkaRecord:
    return KafkaRecord(T, 0, offset, key.encode(), value)


def expected(
    records: list[KafkaRecord], end: int, batch_size: int = 2
) -> tuple[list[ExpectedSegment], ExpectedWrites]:
    writes = ExpectedWrites(build_mapper(MappingSpec(), "d"), TaskRange(T, 0, 0, end), batch_size, 1 << 20)
    segments = [s for r in records for s in writes.feed(r)] + list(writes.finish())
    return segments, writes


def test_expected_writes_are_the_writers_segments() -> None:
    segments, writes = expected(
        [
            record(0, "a", b'{"x":1}'),
            record(1, "a", b'{"x":2}'),  # same segment: replaces x=1, which is never written
            record(2, "b", b'{"y":1}'),
            record(3, "c", b"not json"),  # a dead letter closes the segment [2]
            record(5, "a", None),  # offset 4 skipped; a tombstone
            record(6, "a", b'{"x":3}'),  # a put after a delete of its row starts a segment
        ],
        end=7,
    )
    cells = [(c.row, c.column, c.version, c.value, c.offset) for s in segments for c in s.cells]
    assert cells == [
        (b"a", b"d:x", 1, b"2", 1),
        (b"b", b"d:y", 2, b"1", 2),
        (b"a", b"d:x", 6, b"3", 6),
    ]
    assert [d for s in segments for d in s.deletes] == [ExpectedDelete(b"a", b"d", 5, 5)]
    account = writes.account
    assert (account.present, account.skipped, account.bad[0].offset) == (6, 1, 3)


def cell(row: bytes, version: int, value: bytes = b"v", column: bytes = b"d:c") -> ExpectedCell:
    return ExpectedCell(row, column, version, value, version)


def run(
    segments: list[ExpectedSegment], view: RowsView, in_window: object = lambda v: 0 <= v < 100
) -> tuple[list[tuple[FindingKind, bytes | None, int | None]], CellTally]:
    index, tally, candidates = WindowIndex(), CellTally(), CellCandidates()
    found = check_batch(REF, segments, view, index, in_window, tally, candidates)  # type: ignore[arg-type]
    found += settle(index, in_window, tally, candidates)  # type: ignore[arg-type]
    return [(f.kind, f.row, f.expected_version) for f in found], tally


def test_cells_verified_bytes_differ_missing_and_covered() -> None:
    segment = ExpectedSegment(
        (cell(b"ok", 3), cell(b"other", 3, b"v"), cell(b"gone", 3), cell(b"old", 3)), ()
    )
    view = RowsView(
        latest={b"ok": {b"d:c": (b"v", 3)}, b"other": {b"d:c": (b"w", 3)}, b"old": {b"d:c": (b"n", 200)}},
        at={3: {b"ok": {b"d:c": (b"v", 3)}, b"other": {b"d:c": (b"w", 3)}}},
    )
    assert read_plan([segment]).at == {3: (b"ok", b"other", b"gone", b"old")}
    found, tally = run([segment], view)
    assert found == [(FindingKind.CELL_BYTES_DIFFER, b"other", 3), (FindingKind.CELL_MISSING, b"gone", 3)]
    assert (tally.verified, tally.covered_by_newer) == (1, 1)


def test_later_delete_and_newer_cell_of_the_window_cover_an_absent_cell() -> None:
    first = ExpectedSegment((cell(b"r", 1), cell(b"s", 1)), ())
    later = ExpectedSegment((cell(b"s", 4, b"new"),), (ExpectedDelete(b"r", b"d", 4, 4),))
    view = RowsView(latest={b"s": {b"d:c": (b"new", 4)}}, at={4: {b"s": {b"d:c": (b"new", 4)}}})
    found, tally = run([first, later], view)
    assert found == []
    assert (tally.verified, tally.covered_by_newer, tally.deletes_verified) == (1, 2, 1)


def test_delete_not_applied_and_unexpected_cells() -> None:
    segment = ExpectedSegment((cell(b"p", 5),), (ExpectedDelete(b"r", b"d", 5, 5),))
    view = RowsView(
        latest={b"p": {b"d:c": (b"v", 5), b"d:hand": (b"h", 7), b"d:new": (b"n", 500)}},
        at={5: {b"p": {b"d:c": (b"v", 5)}, b"r": {b"d:c": (b"back", 2)}}},
    )
    found, _tally = run([segment], view)
    assert found == [
        (FindingKind.DELETE_NOT_APPLIED, b"r", 5),
        (FindingKind.UNEXPECTED_CELL, b"p", None),  # d:hand at 7, inside the window; d:new at 500 is not
    ]


def test_field_versions_newer_than_the_window_are_later_data() -> None:
    segment = ExpectedSegment((cell(b"p", 1000), cell(b"q", 2000)), ())
    view = RowsView(
        latest={b"p": {b"d:c": (b"v", 1000), b"d:x": (b"z", 5000)}, b"q": {b"d:c": (b"v", 2000)}},
        at={1000: {b"p": {b"d:c": (b"v", 1000)}}, 2000: {b"q": {b"d:c": (b"v", 2000)}}},
    )
    found, tally = run([segment], view, in_window_of([], True))
    assert (found, tally.later_data, tally.verified) == ([], 1, 2)


def test_offset_windows_are_their_ranges() -> None:
    ranges = [PartitionRange(T, 0, 10, 20), PartitionRange(T, 1, 40, 41), PartitionRange(T, 2, 0, 12)]
    inside = in_window_of(ranges, False)
    assert [inside(v) for v in (0, 9, 19, 20, 39, 40, 41)] == [True, True, True, False, False, True, False]


def epoch(
    epoch_id: int, ranges: tuple[PartitionRange, ...], kind: EpochKind = EpochKind.STREAM, **metrics: object
) -> Epoch:
    return Epoch(
        epoch_id,
        "p",
        kind,
        EpochState.COMMITTED,
        "tok",
        "d",
        "r",
        datetime.now(UTC),
        metrics=dict(metrics),
        ranges=ranges,
    )


def test_offsets_against_the_vote() -> None:
    rng = PartitionRange(T, 0, 0, 10)
    vote = {
        "topic": T,
        "partition": 0,
        "start": 0,
        "end": 10,
        "records": 8,
        "skipped_offsets": 2,
        "bad_records": 1,
    }
    voted = vote_counts(epoch(1, (rng,), partitions=[vote]))[rng]
    assert voted == OffsetCounts(8, 2, 1)
    assert check_offsets(1, rng, voted, OffsetCounts(8, 2, 1)) == []
    assert [f.kind for f in check_offsets(1, rng, voted, OffsetCounts(7, 3, 1))] == [
        FindingKind.VOTE_COUNTS_DIFFER
    ]
    assert [f.kind for f in check_offsets(1, rng, OffsetCounts(9, 2, 1), OffsetCounts(8, 2, 1))] == [
        FindingKind.VOTE_COUNTS_DO_NOT_ADD_UP
    ]
    assert [f.kind for f in check_offsets(1, rng, None, OffsetCounts(8, 2, 1))] == [
        FindingKind.VOTE_COUNTS_DO_NOT_ADD_UP
    ]


def test_dead_letters_missing_extra_and_under_fail() -> None:
    rng = PartitionRange(T, 0, 0, 10)
    refused = [BadRecordSeen(3, "bad"), BadRecordSeen(5, "bad")]
    found = check_dead_letters(1, rng, "dead_letter", refused, [5, 8, 12])
    assert [(f.kind, f.offset) for f in found] == [
        (FindingKind.DEAD_LETTER_MISSING, 3), (FindingKind.DEAD_LETTER_EXTRA, 8),
    ]  # fmt: skip
    assert [f.kind for f in check_dead_letters(1, rng, "fail", refused[:1], [])] == [
        FindingKind.RECORD_UNMAPPABLE
    ]


def test_group_and_retention() -> None:
    epochs = [
        epoch(1, (PartitionRange(T, 0, 0, 10),)),
        epoch(2, (PartitionRange(T, 0, 10, 20), PartitionRange(T, 1, 0, 5))),
        epoch(3, (PartitionRange(T, 0, 0, 50),), EpochKind.BACKFILL),
    ]
    ends = stream_ends(epochs)
    assert ends == {(T, 0): (20, 2), (T, 1): (5, 2)}
    assert check_group("g", ends, {(T, 0): 25, (T, 1): 5}) == []
    behind = check_group("g", ends, {(T, 0): 19, (T, 1): None})
    assert [(f.kind, f.partition, f.offset) for f in behind] == [
        (FindingKind.GROUP_BEHIND, 0, 20), (FindingKind.GROUP_BEHIND, 1, 5),
    ]  # fmt: skip
    assert [not_auditable(PartitionRange(T, 0, 10, 20), low) for low in (None, 10, 11, 25)] == [
        False, False, True, True,
    ]  # fmt: skip


def test_finding_log_keeps_a_bounded_number_and_counts_all() -> None:
    log = FindingLog(limit=2)
    log.extend([Finding(FindingKind.CELL_MISSING, "x", row=b"r%d" % i) for i in range(5)])
    assert (len(log.kept), log.total, log.dropped) == (2, 5, 3)
    assert shown(b"a" * 50) == "a" * 40 + "... (50 bytes)"


def test_epoch_window_syntax() -> None:
    assert epoch_bounds("3-7", ValueError) == (3, 7)
    assert epoch_bounds("4", ValueError) == (4, 4)
    for bad in ("7-3", "x", "3-", "-3"):
        with pytest.raises(ValueError):
            epoch_bounds(bad, ValueError)


def test_a_replay_task_writes_only_its_selection() -> None:
    mapper = build_mapper(MappingSpec(), "d")
    writes = ExpectedWrites(mapper, TaskRange(T, 0, 0, 4, (0, 2)), 10, 1 << 20)
    records = [record(o, "a", b'{"x":%d}' % o) for o in range(4)]
    segments = [s for r in records for s in writes.feed(r)] + list(writes.finish())
    # offset 1 is not selected: it closes the segment of 0 (version 0); 2 goes alone (version 2)
    assert [(c.version, c.value) for s in segments for c in s.cells] == [(0, b"0"), (2, b"2")]
    assert (writes.account.present, writes.account.skipped) == (2, 2)


def test_report_verdict_text_and_exit_status() -> None:
    report = AuditReport("p", [3, 4])
    assert (report.verdict, exit_status(report.to_json())) == ("clean", 0)
    assert "verdict: clean (0 findings)" in report.text()
    report.findings.add(Finding(FindingKind.GROUP_BEHIND, "behind", 4, T, 0, 10))
    answer = report.to_json()
    assert (answer["verdict"], answer["findings_by_kind"], exit_status(answer)) == (
        "discrepancies", {"group_behind": 1}, 1,
    )  # fmt: skip
    assert report.text().splitlines()[-1] == "group_behind: t/0@10: behind"


def test_indexes_built_apart_merge() -> None:
    one, two = WindowIndex(), WindowIndex()
    one.add(ExpectedSegment((cell(b"r", 3),), ()))
    two.add(ExpectedSegment((cell(b"r", 9),), (ExpectedDelete(b"s", b"d", 7, 7),)))
    one.merge(two)
    assert one.expects(b"r", b"d:c", 9) and one.covers(cell(b"r", 3)) and one.covers(cell(b"s", 7))
    assert (one.lowest, one.highest) == (3, 9)
