"""Planning a replay of dead letters (pure): the request's filter, the chunks of selected
offsets, the refusals; and the Spark side's task plan with a selection."""

from __future__ import annotations

import pytest

from airflow_provider_eo.ledger.model.epoch import PartitionRange
from airflow_provider_eo.ledger.planning.replay_plan import (
    Candidate,
    ReplayFilter,
    SelectedRange,
    plan_replay,
    selection_of,
)
from airflow_provider_eo.operators.backfill_request_form import parse_ranges, replay_conf, replay_filter_of
from airflow_provider_eo.spark.driver.task_plan import plan_tasks
from airflow_provider_eo.spark.records import TaskRange


def test_filter_from_the_form_and_the_conf() -> None:
    assert replay_filter_of({"start_offset": None, "topics": [], "dead_letters_of_epoch": 7}) == ReplayFilter(
        epoch=7
    )
    assert replay_filter_of({"dead_letters_of_epoch": None, "topics": []}) is None  # a range backfill
    conf = {"replay_dead_letters": {"topic": "t", "partition": 0, "from_offset": 3, "reason": "JSON"}}
    wanted = replay_filter_of({}, conf)
    assert wanted == ReplayFilter(topic="t", partition=0, from_offset=3, reason="JSON")
    assert wanted is not None and wanted.given() == {
        "topic": "t",
        "partition": 0,
        "from_offset": 3,
        "reason": "JSON",
    }
    assert replay_conf(wanted) == conf  # what eo-ledger dead-letters replay sends, read back the same


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"dead_letters_of_epoch": 3, "start_offset": 0}, "backfill params ['start_offset']: a replay"),
        ({"dead_letters_of_epoch": 3, "topics": ["t"]}, "backfill params ['topics']: a replay"),
        ({"dead_letters_of_epoch": 3, "replay_dead_letters": {"epoch": 3}}, "not both"),
        ({"dead_letters_of_epoch": "x"}, "not an epoch id: 'x'"),
        ({"replay_dead_letters": {"epochs": 3}}, "unknown keys ['epochs']"),
        ({"replay_dead_letters": {"partition": 1}}, "a partition or offset range needs its topic"),
        ({"replay_dead_letters": {"topic": "t", "from_offset": 5, "to_offset": 5}}, "must be above"),
        ({"replay_dead_letters": {"epoch": -1}}, "not a non-negative integer: -1"),
        ({"replay_dead_letters": {"epoch": None}}, "give at least one of"),
    ],
)
def test_filter_refusals_name_the_field(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=None) as raised:
        replay_filter_of(params)
    assert message in str(raised.value)


def test_chunks_hold_at_most_max_records_offsets_in_order() -> None:
    candidates = [
        Candidate("b", 0, 4, 10),
        Candidate("a", 1, 9, 10),
        Candidate("a", 0, 2, 10),
        Candidate("a", 0, 7, 11, resolved_by_epoch=20),  # resolved: not replayed again
        Candidate("a", 0, 5, 10),
        Candidate("a", 1, 3, 10),
    ]
    plan = plan_replay(candidates, 3)
    assert plan.chunks == (
        (SelectedRange("a", 0, 2, 6, (2, 5)), SelectedRange("a", 1, 3, 4, (3,))),
        (SelectedRange("a", 1, 9, 10, (9,)), SelectedRange("b", 0, 4, 5, (4,))),
    )
    assert plan.selected == {("a", 0): (2, 5), ("a", 1): (3, 9), ("b", 0): (4,)}
    assert (plan.record_count, plan.already_resolved, plan.resolved_by) == (5, 1, (20,))
    assert plan.refusal("p", ReplayFilter(epoch=10)) is None
    assert plan_replay(candidates, None).chunks == (
        (
            SelectedRange("a", 0, 2, 6, (2, 5)),
            SelectedRange("a", 1, 3, 10, (3, 9)),
            SelectedRange("b", 0, 4, 5, (4,)),
        ),
    )


def test_refusals_when_nothing_is_left_to_replay() -> None:
    resolved = plan_replay([Candidate("t", 0, 1, 4, 9), Candidate("t", 0, 2, 4, 12)], 10)
    assert resolved.chunks == ()
    assert resolved.refusal("p", ReplayFilter(epoch=4)) == (
        "pipeline 'p': the 2 dead letter(s) matching {'epoch': 4} are already resolved by epoch(s) 9, 12, "
        "nothing to replay"
    )
    assert plan_replay([], 10).refusal("p", ReplayFilter(reason="x")) == (
        "pipeline 'p': no dead letter of a committed epoch matches {'reason': 'x'}"
    )


def test_a_chunk_travels_as_its_xcom_summary_and_back() -> None:
    chunk = (SelectedRange("t", 0, 2, 6, (2, 5)),)
    summary = [r.to_summary() for r in chunk]
    assert summary == [{"topic": "t", "partition": 0, "start": 2, "end": 6, "records": 4, "offsets": [2, 5]}]
    parsed = parse_ranges(summary)
    assert parsed == list(chunk) and selection_of(parsed) == {("t", 0): (2, 5)}
    assert selection_of([PartitionRange("t", 0, 2, 6)]) is None
    with pytest.raises(ValueError, match="must span its selected offsets exactly"):
        parse_ranges([{"topic": "t", "partition": 0, "start": 1, "end": 6, "offsets": [2, 5]}])
    with pytest.raises(ValueError, match="must all carry"):
        selection_of([chunk[0], PartitionRange("t", 1, 0, 1)])


def test_tasks_carry_the_selected_offsets_of_their_sub_range() -> None:
    ranges = [PartitionRange("t", 0, 2, 12), PartitionRange("t", 1, 0, 1)]
    tasks = plan_tasks(ranges, 4, {("t", 0): (2, 5, 6, 11)})
    assert tasks == [
        TaskRange("t", 0, 2, 5, (2,)),
        TaskRange("t", 0, 5, 8, (5, 6)),
        TaskRange("t", 0, 8, 12, (11,)),
        TaskRange("t", 1, 0, 1, ()),
    ]
    assert [t.read_span for t in tasks] == [
        TaskRange("t", 0, 2, 3),
        TaskRange("t", 0, 5, 7),
        TaskRange("t", 0, 11, 12),
        None,
    ]
    assert plan_tasks(ranges, 4) == [
        TaskRange("t", 0, 2, 5),
        TaskRange("t", 0, 5, 8),
        TaskRange("t", 0, 8, 12),
        TaskRange("t", 1, 0, 1),
    ]
