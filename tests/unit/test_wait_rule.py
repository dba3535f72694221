"""The wait step without services: the pending rule, the ``wait`` option, the trigger's
serialized form (what the metadata DB stores)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from airflow_provider_eo.config import PipelineConfigError, parse_pipelines_text
from airflow_provider_eo.config.specs import WaitSpec
from airflow_provider_eo.ledger.planning.new_records import pending_records
from airflow_provider_eo.triggers.records_available import RecordsAvailableTrigger

A0, A1, A2 = ("a", 0), ("a", 1), ("a", 2)


def test_records_past_the_cursor_count_from_the_cursor_or_the_low_watermark() -> None:
    found = pending_records(
        "p",
        [A2, A0, A1],
        cursors={A0: 10, A1: 3, A2: 7, ("gone", 0): 5},  # a pin no longer listed is ignored
        watermarks={A0: (0, 10), A1: (5, 9), A2: (0, 12)},
    )
    assert (found.pending, found.unpinned, found.out_of_range) == ({A0: 0, A1: 4, A2: 5}, {}, (A1,))
    assert (found.total, found.ready) == (9, True)
    assert found.reason() == "9 record(s) past the cursors; cursor outside the watermarks: a[1]"


def test_nothing_past_any_cursor_waits() -> None:
    found = pending_records("p", [A0, A1], cursors={A0: 4, A1: 0}, watermarks={A0: (0, 4), A1: (0, 0)})
    assert (found.total, found.ready, found.reason()) == (0, False, "no records past the cursors")


def test_an_unpinned_partition_goes_on_even_when_empty_and_a_cursor_past_the_high_watermark_too() -> None:
    unpinned = pending_records("p", [A0, A1], cursors={A0: 4}, watermarks={A0: (0, 4), A1: (2, 2)})
    assert (unpinned.total, unpinned.unpinned, unpinned.ready) == (0, {A1: 0}, True)
    assert unpinned.to_json() == {
        "pipeline": "p",
        "pending": 0,
        "partitions": [{"topic": "a", "partition": 0, "pending": 0}],
        "unpinned": [{"topic": "a", "partition": 1, "records": 0}],
        "out_of_range": [],
    }
    recreated = pending_records("p", [A0], cursors={A0: 9}, watermarks={A0: (0, 3)})
    assert (recreated.pending, recreated.out_of_range, recreated.ready) == ({A0: 0}, (A0,), True)


def _wait_of(**pipeline: Any) -> WaitSpec:
    entry = {"name": "o", "topics": ["o"], "hbase": {"table": "o"}, **pipeline}
    return parse_pipelines_text(yaml.safe_dump({"pipelines": [entry]}), "p.yaml")["o"].wait


def test_wait_is_on_for_scheduled_pipelines_and_its_timeout_fits_the_run() -> None:
    assert _wait_of() == WaitSpec(enabled=False, timeout_seconds=3600, poll_seconds=10)
    assert _wait_of(schedule="@continuous") == WaitSpec(enabled=True, timeout_seconds=3600, poll_seconds=10)
    assert _wait_of(schedule="@continuous", wait={"enabled": False}).enabled is False
    assert _wait_of(wait={"enabled": True, "timeout_seconds": 20, "poll_seconds": 2}) == WaitSpec(True, 20, 2)
    # half of what 30 - 5 minutes leave beyond the write
    assert (
        _wait_of(schedule="@hourly", timeouts={"write_minutes": 5, "run_minutes": 30}).timeout_seconds == 750
    )


P = "p.yaml: pipeline 'o': field "


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"wait": {"enabled": "yes"}}, P + "'wait.enabled': must be true or false, got 'yes'"),
        ({"wait": {"poll_seconds": 0}}, P + "'wait.poll_seconds': must be an integer >= 1, got 0"),
        (
            {"wait": {"timeout_seconds": 5, "poll_seconds": 6}},
            P + "'wait.poll_seconds': must not exceed timeout_seconds (5), got 6",
        ),
        (
            {"wait": {"timeout_seconds": 1500}, "timeouts": {"write_minutes": 5, "run_minutes": 30}},
            P + "'wait.timeout_seconds': must leave time for the write: less than "
            "60 * (timeouts.run_minutes - timeouts.write_minutes) = 1500, got 1500",
        ),
        (
            {"wait": {"every": 3}},
            P + "'wait.every': unknown key (allowed here: enabled, poll_seconds, timeout_seconds)",
        ),
    ],
)
def test_invalid_wait_options_name_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(PipelineConfigError) as info:
        _wait_of(**fields)
    assert str(info.value) == message


def test_the_trigger_serializes_to_its_classpath_and_names_only() -> None:
    trigger = RecordsAvailableTrigger(
        pipeline="p",
        topics=("a",),
        topic_pattern=None,
        deadline=1700000000.5,
        poll_interval=3,
        kafka_conn_id="k",
    )
    classpath, kwargs = trigger.serialize()
    assert (classpath, kwargs) == (
        "airflow_provider_eo.triggers.records_available.RecordsAvailableTrigger",
        {
            "pipeline": "p",
            "topics": ["a"],
            "topic_pattern": None,
            "deadline": 1700000000.5,
            "poll_interval": 3.0,
            "ledger_conn_id": "eo_ledger",
            "kafka_conn_id": "k",
        },
    )
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(__import__(module, fromlist=[name]), name)(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)
