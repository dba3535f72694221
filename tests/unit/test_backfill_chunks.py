"""Cutting a backfill into chunks (one epoch each), and interval bounds as Kafka timestamps."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from airflow_provider_eo.ledger.model.epoch import PartitionRange as R
from airflow_provider_eo.ledger.planning.backfill_plan import epoch_ms, split_into_chunks
from airflow_provider_eo.operators.backfill_request_form import parse_ranges


def test_chunks_fill_in_partition_order_and_count_ceil_n_over_k() -> None:
    ranges = [R("t", 1, 7, 37), R("t", 0, 0, 50)]  # 80 offsets
    assert split_into_chunks(ranges, 40) == (
        (R("t", 0, 0, 40),),
        (R("t", 0, 40, 50), R("t", 1, 7, 37)),
    )
    assert split_into_chunks(ranges, 30) == (
        (R("t", 0, 0, 30),),
        (R("t", 0, 30, 50), R("t", 1, 7, 17)),
        (R("t", 1, 17, 37),),
    )
    for k in (1, 3, 7, 79, 80, 81):
        chunks = split_into_chunks(ranges, k)
        assert len(chunks) == math.ceil(80 / k)
        assert [sum(r.record_count for r in c) for c in chunks] == [k] * (80 // k) + (
            [80 % k] if 80 % k else []
        )
        pieces = sorted(r for c in chunks for r in c)  # together: exactly the input, no overlap
        assert [(r.partition, r.start, r.end) for r in pieces][:1] == [(0, 0, min(k, 50))]
        assert sum(r.record_count for r in pieces) == 80
        assert all(len({r.tp for r in c}) == len(c) for c in chunks)  # one range per partition
    assert split_into_chunks(ranges, None) == ((R("t", 0, 0, 50), R("t", 1, 7, 37)),)
    assert split_into_chunks([], 10) == () == split_into_chunks([R("t", 0, 5, 5)], None)
    with pytest.raises(ValueError, match="max_records must be >= 1, got 0"):
        split_into_chunks(ranges, 0)


def test_epoch_ms_is_exact_and_rounds_sub_milliseconds_up() -> None:
    midnight = datetime(2026, 3, 1, tzinfo=UTC)
    assert epoch_ms(midnight) == 1_772_323_200_000
    assert epoch_ms(midnight.replace(tzinfo=None)) == 1_772_323_200_000  # naive = UTC
    assert epoch_ms(midnight + timedelta(microseconds=1)) == 1_772_323_200_001
    assert epoch_ms(midnight + timedelta(milliseconds=123)) == 1_772_323_200_123
    assert epoch_ms(datetime(2026, 3, 1, 1, tzinfo=timezone(timedelta(hours=1)))) == 1_772_323_200_000


def test_ranges_round_trip_through_chunk_summaries() -> None:
    summary = [R("t", 0, 40, 50).to_summary()]
    assert parse_ranges(summary) == [R("t", 0, 40, 50)]
    with pytest.raises(ValueError, match="records must equal end - start"):
        parse_ranges([{**summary[0], "records": 9}])


def test_epoch_ms_of_a_pendulum_datetime_equals_the_stdlib_one() -> None:
    """Airflow hands out pendulum datetimes (``context["data_interval_start"]``)."""
    import pendulum

    paris = pendulum.datetime(2026, 3, 1, 1, 0, 0, 500, tz="Europe/Paris")
    assert epoch_ms(paris) == epoch_ms(datetime(2026, 3, 1, 0, 0, 0, 500, tzinfo=UTC)) == 1772323200001
