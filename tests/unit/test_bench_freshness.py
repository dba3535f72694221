"""The freshness benchmark's pure parts: records matched to the one epoch or micro-batch
holding them (none, or two, is an error), nearest-rank percentiles, the summary's figures,
a Structured Streaming checkpoint's batches as ranges (a purged checkpoint refused), when a
query has caught up, and the targets and ratios read from a report."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.freshness_checkpoint import PurgedCheckpointError, batch_ends, batches_as_commits
from benchmarks.freshness_figures import (
    Commit,
    MatchError,
    ProducedRecord,
    caught_up,
    freshness_summary,
    match_records,
    oldest_produced,
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


def test_a_purged_checkpoint_is_refused() -> None:
    """Spark deleted batches 0 and 1: batch 2 would seem to hold every offset from 0."""
    ends = {2: {0: 5}, 3: {0: 7}}
    with pytest.raises(PurgedCheckpointError, match="2 batches from 2 to 3: batches were purged"):
        batches_as_commits(ends, {2: (1.0, 2.0), 3: (2.0, 3.0)})
    with pytest.raises(PurgedCheckpointError, match="from 0 to 2"):
        batches_as_commits({0: {0: 1}, 2: {0: 3}}, {})
    assert batches_as_commits({}, {}) == []


def steady_batches(starts: list[float], per_batch: int) -> list[Commit]:
    """One partition; batch ``i`` planned at ``starts[i]`` holds ``per_batch`` offsets."""
    return [
        Commit(i, start, start + 0.4, {0: (i * per_batch, (i + 1) * per_batch)})
        for i, start in enumerate(starts)
    ]


def test_caught_up_when_each_batch_read_what_was_there_at_its_start() -> None:
    # offset o produced at 100 + o / 10; batch i planned at 101 + i reads up to 10 more
    produced_at = {(0, o): 100 + o / 10 for o in range(100)}
    batches = steady_batches([101.0, 102.0, 103.0, 104.0], 10)
    assert oldest_produced(batches[1], produced_at) == 101.0
    assert caught_up(batches, produced_at, batches=3, slack_s=0.5)
    assert not caught_up(batches[:3], produced_at, batches=3, slack_s=0.5)  # too few batches yet
    assert not caught_up(batches, {}, batches=3, slack_s=0.5)  # produce times not known yet


def test_a_query_reading_a_backlog_is_not_caught_up() -> None:
    # planned every second but each batch reads 5 records of the 10 produced a second
    produced_at = {(0, o): 100 + o / 10 for o in range(100)}
    lagging = steady_batches([101.0, 102.0, 103.0, 104.0], 5)
    assert not caught_up(lagging, produced_at, batches=3, slack_s=0.5)
    # one catch-up batch, then trigger-sized ones: caught up from the catch-up batch on
    drained = [
        Commit(0, 50.0, 50.1, {0: (0, 0)}),
        Commit(1, 106.0, 108.0, {0: (0, 60)}),
        Commit(2, 108.0, 108.4, {0: (60, 80)}),
        Commit(3, 109.0, 109.4, {0: (80, 90)}),
        Commit(4, 110.0, 110.4, {0: (90, 100)}),
    ]
    assert caught_up(drained, produced_at, batches=3, slack_s=0.5)
    assert not caught_up(drained[:4], produced_at, batches=3, slack_s=0.5)


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
        "ratio_p50_submit_vs_streaming": 9.0,
        "ratio_p99_submit_vs_streaming": 7.0,
    }
    checks = {c["key"]: c for c in check_targets({"freshness": fresh})}
    assert checks["freshness.session.measured.p50_s"]["met"] is True
    assert checks["freshness.session.measured.p99_s"]["met"] is False
    assert checks["freshness.session.measured.p99_s"]["profile"] == {"freshness.session": fresh["session"]}
    lines = freshness_lines(fresh)
    assert [line.split()[0] for line in lines[2:5]] == ["submit", "session", "structured_streaming"]
    assert lines[-2:] == [
        "  session vs structured streaming: p50 4.0x, p99 5.5x",
        "  submit vs structured streaming: p50 9.0x, p99 7.0x",
    ]
    assert check_targets({})[0]["met"] is None
