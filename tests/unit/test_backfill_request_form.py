"""The backfill DAG's forms read into typed requests (operators/backfill_request_form.py):
explicit ranges, the Trigger form's window, a data interval, a replay; the errors name
the param at fault."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from airflow_provider_eo.ledger.model.epoch import PartitionRange as R
from airflow_provider_eo.ledger.planning.backfill_request import (
    DataInterval,
    ExplicitRanges,
    OffsetWindow,
    PartitionChoice,
)
from airflow_provider_eo.ledger.planning.replay_plan import ReplayFilter
from airflow_provider_eo.operators.backfill_request_form import request_of

T0 = datetime(2026, 3, 1, tzinfo=UTC)
T1 = datetime(2026, 3, 2, tzinfo=UTC)
#: The Trigger form as Airflow hands it over when only a start offset is filled in.
FORM = {
    "topics": [],
    "partitions": [],
    "start_offset": None,
    "end_offset": None,
    "start_time": None,
    "end_time": None,
    "dead_letters_of_epoch": None,
}


def test_explicit_ranges_win_over_the_form_and_the_interval() -> None:
    chunk = '[{"topic": "t", "partition": 0, "start": 1, "end": 3, "records": 2}]'
    assert request_of(chunk, {**FORM, "start_offset": 0}, (T0, T1)) == ExplicitRanges((R("t", 0, 1, 3),))
    assert request_of([["t", 1, 0, 5]]) == ExplicitRanges((R("t", 1, 0, 5),))


def test_the_trigger_form_is_a_window_ending_at_the_runs_creation() -> None:
    form = {**FORM, "topics": ["t"], "partitions": [0, "2"], "start_time": "2026-03-01T00:00:00+00:00"}
    for empty in ("", None, "None", []):
        assert request_of(empty, form, requested_at=T1) == OffsetWindow(
            choice=PartitionChoice(topics=("t",), partitions=(0, 2)), start_time=T0, until=T1
        )
    assert request_of(None, {**FORM, "start_offset": 3, "end_offset": 9}) == OffsetWindow(
        start_offset=3, end_offset=9
    )


def test_a_backfill_run_replays_its_data_interval() -> None:
    assert request_of(None, {**FORM, "partitions": [1]}, (T0, T1), T1) == DataInterval(
        T0, T1, PartitionChoice(partitions=(1,))
    )
    with pytest.raises(ValueError) as info:
        request_of(None, {**FORM, "start_offset": 0, "end_time": "2026-03-01"}, (T0, T1))
    assert str(info.value) == (
        "backfill params ['start_offset', 'end_time']: a run over a data interval replays that interval; "
        "leave them empty"
    )


def test_a_replay_from_the_form_or_the_conf() -> None:
    assert request_of(None, {**FORM, "dead_letters_of_epoch": 7}) == ReplayFilter(epoch=7)
    conf = {"replay_dead_letters": {"reason": "JSON"}}
    assert request_of(None, {**FORM, **conf}) == ReplayFilter(reason="JSON")
    with pytest.raises(ValueError) as info:
        request_of(None, {**FORM, "dead_letters_of_epoch": 7}, (T0, T1))
    assert str(info.value) == "a replay of dead letters is a manual run, not a run over a data interval"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "backfill params: give exactly one of 'start_offset' and 'start_time'"),
        ({"start_offset": -1}, "backfill param 'start_offset': not a non-negative integer: -1"),
        ({"start_offset": True}, "backfill param 'start_offset': not a non-negative integer: True"),
        ({"start_offset": 0, "partitions": ["x"]},
         "backfill param 'partitions': not a non-negative integer: 'x'"),
        ({"start_time": "yesterday"}, "backfill param 'start_time': not an ISO-8601 date-time: 'yesterday'"),
        ({"start_offset": 0, "end_time": "soon"},
         "backfill param 'end_time': not an ISO-8601 date-time: 'soon'"),
        ({"start_offset": 0, "end_offset": 4, "end_time": "2026-03-01"},
         "backfill params: give at most one of 'end_offset' and 'end_time'"),
    ],
)  # fmt: skip
def test_form_errors_name_the_param(params: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        request_of(None, {**FORM, **params})
    assert str(info.value) == message


def test_a_bad_range_entry_is_named() -> None:
    with pytest.raises(ValueError) as info:
        request_of([{"topic": "t", "partition": 0, "start": 1, "end": 3, "records": 5}])
    assert str(info.value) == (
        "backfill ranges[0] = {'topic': 't', 'partition': 0, 'start': 1, 'end': 3, 'records': 5}: "
        "records must equal end - start"
    )
