"""Merging range results (audit/range_jobs.py): the window keeps what one pass would keep."""

from __future__ import annotations

from airflow_provider_eo.audit.findings import Finding, FindingKind, FindingLog
from airflow_provider_eo.audit.range_jobs import merge_findings


def _finding(kind: FindingKind, offset: int) -> Finding:
    return Finding(kind, "detail", 1, "t", 0, offset)


def test_merged_logs_keep_the_first_findings_and_count_every_one() -> None:
    parts = [
        [_finding(FindingKind.CELL_MISSING, o) for o in range(3)],
        [_finding(FindingKind.UNEXPECTED_CELL, o) for o in range(3, 6)],
        [_finding(FindingKind.CELL_MISSING, 6)],
    ]
    one_pass = FindingLog(4)
    for part in parts:
        one_pass.extend(part)
    merged = FindingLog(4)
    for part in parts:
        log = FindingLog(4)  # each range bounded by the same limit
        log.extend(part)
        merge_findings(merged, log)
    assert merged.kept == one_pass.kept == parts[0] + parts[1][:1]
    assert merged.counts == one_pass.counts
    assert (merged.total, merged.dropped) == (7, 3)


def test_a_part_that_dropped_findings_adds_them_as_counts() -> None:
    part = FindingLog(1)
    part.extend([_finding(FindingKind.CELL_BYTES_DIFFER, o) for o in range(5)])
    merged = FindingLog(10)
    merge_findings(merged, part)
    assert [f.offset for f in merged.kept] == [0]
    assert dict(merged.counts) == {FindingKind.CELL_BYTES_DIFFER: 5}
