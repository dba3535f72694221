"""The freshness benchmark's pure parts: records matched to the one epoch or micro-batch
holding them (none, or two, is an error), nearest-rank percentiles, the summary's figures,
a Structured Streaming checkpoint's batches as ranges, and the targets read from a report."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.freshness_checkpoint import batch_ends, batches_as_commits
from benchmarks.freshness_figures import (
    Commit,
    MatchError,
    ProducedRecord,
    freshness_summary,
    match_records,
    percentile,
)
from benchmarks.report import freshness_lines
from benchmarks.targets import check_targets

EPOCHS = [
    Commit(1, 100.0, 103.0, {0: (0, 3), 1: (0, 2)}),
    Commit(2, 103.5, 106.0, {0: (3, 5), 1: (2, 2)}),
    Commit(3, 106.5, 110.0, {1: (2, 4)}),
]


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([7.0, 1.0, 3.0], 50) == 3.0
    assert percentile([7.0, 1.0, 3.0], 99) == 7.0
    assert percentile([4.0], 1) == 4.0
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_each_record_gets_the_epoch_holding_its_offset() -> None:
    records = [
        ProducedRecord(0, 0, 99.0),
        ProducedRecord(0, 2, 101.0),
        ProducedRecord(0, 3, 102.0),
        ProducedRecord(1, 1, 100.5),
        ProducedRecord(1, 2, 104.0),
        ProducedRecord(1, 3, 105.0),
    ]
    matched = match_records(records, EPOCHS)
    assert [(r.partition, r.offset, c.commit_id) for r, c in matched] == [
        (0, 0, 1),
        (0, 2, 1),
        (0, 3, 2),
        (1, 1, 1),
        (1, 2, 3),
        (1, 3, 3),
    ]


def test_a_record_beyond_every_epoch_is_an_error() -> None:
    with pytest.raises(MatchError, match="record 0@5: in no commit's range"):
        match_records([ProducedRecord(0, 5, 1.0)], EPOCHS)
    with pytest.raises(MatchError, match="record 2@0"):
        match_records([ProducedRecord(2, 0, 1.0)], EPOCHS)


def test_a_record_before_every_epoch_is_an_error() -> None:
    with pytest.raises(MatchError, match="record 0@0"):
        match_records([ProducedRecord(0, 0, 1.0)], [Commit(1, 0.0, 1.0, {0: (1, 4)})])


def test_overlapping_epochs_are_an_error() -> None:
    overlapping = [*EPOCHS, Commit(4, 110.0, 111.0, {0: (4, 6)})]
    with pytest.raises(MatchError, match="partition 0: commits 2 and 4 overlap at 4"):
        match_records([], overlapping)


def test_summary_of_freshness_and_epochs() -> None:
    records = [
        ProducedRecord(0, 0, 99.0),  # epoch 1: 4.0 s
        ProducedRecord(0, 1, 102.0),  # epoch 1: 1.0 s
        ProducedRecord(0, 3, 104.0),  # epoch 2: 2.0 s
        ProducedRecord(1, 3, 107.0),  # epoch 3: 3.0 s
    ]
    summary = freshness_summary(match_records(records, EPOCHS))
    assert summary == {
        "records": 4,
        "p50_s": 2.0,
        "p99_s": 4.0,
        "max_s": 4.0,
        "commits": 3,
        "commit_duration_p50_s": 3.0,
        "commit_duration_max_s": 3.5,
        "commit_interval_p50_s": 3.0,
    }
    assert EPOCHS[0].records == 5


OFFSETS_0 = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n{"t":{"1":2,"0":3}}\n'
OFFSETS_1 = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":2,"conf":{}}\n{"t":{"1":4,"0":3}}\n'


def test_checkpoint_offsets_give_each_batch_its_ranges() -> None:
    assert batch_ends(OFFSETS_0, "t") == {0: 3, 1: 2}
    with pytest.raises(ValueError, match="no offsets of topic 'u'"):
        batch_ends(OFFSETS_0, "u")
    ends = {0: batch_ends(OFFSETS_0, "t"), 1: batch_ends(OFFSETS_1, "t"), 2: {0: 5, 1: 4}}
    commits = batches_as_commits(ends, {0: (10.0, 11.0), 1: (11.0, 12.5)})  # batch 2 not committed
    assert [(c.commit_id, dict(c.ranges), c.started_at, c.committed_at) for c in commits] == [
        (0, {0: (0, 3), 1: (0, 2)}, 10.0, 11.0),
        (1, {0: (3, 3), 1: (2, 4)}, 11.0, 12.5),
    ]
    with pytest.raises(MatchError, match="record 0@3"):
        match_records([ProducedRecord(0, 3, 9.0)], commits)


def run_figures(p50: float, p99: float) -> dict[str, Any]:
    summary = {"p50_s": p50, "p99_s": p99, "max_s": p99, "commits": 3, "commit_duration_p50_s": 1.0}
    return {"measured": summary, "warmup": {**summary, "p99_s": 20.0}}


def test_targets_and_table_read_the_session_run() -> None:
    fresh = {
        "load": {"records_per_s": 1000, "seconds": 300, "warmup_s": 30, "partitions": 4},
        "submit": run_figures(9.0, 14.0),
        "session": run_figures(4.0, 11.0),
        "structured_streaming": run_figures(1.0, 2.0),
        "ratio_p50_session_vs_streaming": 4.0,
        "ratio_p99_session_vs_streaming": 5.5,
    }
    checks = {c["key"]: c for c in check_targets({"freshness": fresh})}
    assert checks["freshness.session.measured.p50_s"]["met"] is True
    assert checks["freshness.session.measured.p99_s"]["met"] is False
    assert checks["freshness.session.measured.p99_s"]["profile"] == {"freshness.session": fresh["session"]}
    lines = freshness_lines(fresh)
    assert [line.split()[0] for line in lines[2:5]] == ["submit", "session", "structured_streaming"]
    assert lines[-1] == "  session vs structured streaming: p50 4.0x, p99 5.5x"
    assert check_targets({})[0]["met"] is None
