"""Log-line texts of ranges and offsets: bounded however many partitions an epoch has."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from airflow_provider_eo.ledger.model.epoch import (
    LOGGED_RANGES,
    Epoch,
    EpochKind,
    EpochState,
    PartitionRange,
    offsets_text,
    ranges_text,
)

RESERVED = Epoch(
    1, "p", EpochKind.STREAM, EpochState.RESERVED, "token", "d", "r", datetime(2026, 1, 1, tzinfo=UTC)
)


def test_offsets_text_is_sorted_and_names_every_partition_up_to_the_limit() -> None:
    assert offsets_text({("t", 1): 7, ("a", 0): 3}) == "a[0]=3,t[1]=7"


def test_offsets_text_counts_what_it_leaves_out() -> None:
    offsets = {("t", p): p * 10 for p in range(LOGGED_RANGES + 5)}
    text = offsets_text(offsets)
    assert text.startswith("t[0]=0,t[1]=10,")
    assert text.endswith(f"t[{LOGGED_RANGES - 1}]={(LOGGED_RANGES - 1) * 10},... and 5 more")
    assert offsets_text(offsets, limit=None).count("=") == LOGGED_RANGES + 5


def test_ranges_text_with_a_limit() -> None:
    ranges = [PartitionRange("t", p, 0, p + 1) for p in range(3)]
    assert ranges_text(ranges) == "t[0]=[0,1),t[1]=[0,2),t[2]=[0,3)"
    assert ranges_text(ranges, 1) == "t[0]=[0,1),... and 2 more"


def test_a_votes_metrics_log_as_counts_of_their_lists() -> None:
    partitions = [{"topic": "t", "partition": p, "start": 0, "end": 5, "records": 5} for p in range(4000)]
    metrics = {"records": 20000, "partitions": partitions, "schema_ids": [3, 4], "spark_tasks_s": 1.4}
    voted = replace(RESERVED, state=EpochState.WRITTEN, metrics=metrics)
    assert voted.metrics_brief == {
        "records": 20000,
        "partitions": 4000,
        "schema_ids": 2,
        "spark_tasks_s": 1.4,
    }
    assert RESERVED.metrics_brief == {}
