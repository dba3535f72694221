"""The pure parts behind the Epochs page's charts and links: windows, phases, the wait
samples' rhythm, the SVG kit's scales, links into Airflow and actors read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.lag import (
    LagSample,
    SampledPartition,
    wait_sample,
    wait_sample_interval,
)
from airflow_provider_eo.ledger.model.phases import EpochTimes
from airflow_provider_eo.ledger.planning.new_records import PipelinePositions
from airflow_provider_eo.observability.lag_sampling import WaitSampler
from airflow_provider_eo.operators.epoch_link import rendered_epoch_id
from airflow_provider_eo.plugins.chart_window import ChartWindow
from airflow_provider_eo.plugins.svg_plot import Plot, nice_step, number
from airflow_provider_eo.ui_links import airflow_run, airflow_task, epoch_page_in_airflow

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_windows_parse_and_refuse_with_the_accepted_forms() -> None:
    assert ChartWindow.parse("6h") == ChartWindow("6h", span=timedelta(hours=6))
    assert ChartWindow.parse(" 30d ").since(T0) == T0 - timedelta(days=30)
    assert ChartWindow.parse("50e") == ChartWindow("50e", last_epochs=50)
    assert (ChartWindow.parse("50e").since(T0), ChartWindow.parse("12h").label) == (None, "last 12 hours")
    assert ChartWindow.parse("1d").label == "last day"
    for bad in ("0h", "2161h", "91d", "501e", "1w", "", "e", "01h"):
        with pytest.raises(ValueError, match=r"window must be one of <N>h \(hours, 1..2160\), .* got"):
            ChartWindow.parse(bad)


def test_phases_tile_the_epoch_on_the_databases_clock() -> None:
    times = EpochTimes.of(
        created_at=T0,
        reserved_at=T0 + timedelta(seconds=0.2),
        written_at=T0 + timedelta(seconds=30),
        committed_at=T0 + timedelta(seconds=34.5),
        commit_started_at=T0 + timedelta(seconds=34.1),
        metrics={"records": 9, "spark_tasks_s": 12.25, "vote_after_tasks_s": 0.75},
    )
    assert times.phases() == {
        "reserve": 0.2, "wait_for_spark": 16.8, "spark_tasks": 12.25, "wait_for_commit": 4.85, "commit": 0.4,
    }  # fmt: skip
    assert times.duration_s == 34.5 == round(sum(times.phases().values()), 3)
    seconds = [T0 + timedelta(seconds=s) for s in (1, 9, 10)]
    before_0005 = EpochTimes.of(T0, *seconds, None, {"records": 9})
    assert before_0005.phases() == {
        "reserve": 1.0, "wait_for_spark": None, "spark_tasks": None, "wait_for_commit": None, "commit": None,
    }  # fmt: skip
    reserved_only = EpochTimes.of(T0, None, None, None, None, None)
    assert (set(reserved_only.phases().values()), reserved_only.duration_s) == ({None}, None)


def test_wait_samples_come_at_the_first_poll_with_records_and_then_by_partition_count() -> None:
    assert [wait_sample_interval(n) for n in (1, 100, 101, 10_000)] == [60.0, 60.0, 120.0, 6000.0]
    positions = PipelinePositions(
        "p",
        (("t", 0), ("t", 1)),
        {("t", 0): 5, ("t", 1): 9, ("gone", 0): 1},
        {("t", 0): (0, 8), ("t", 1): (2, 7)},
    )
    assert wait_sample("p", positions.cursors, positions.watermarks) == LagSample(
        "p", "wait", None, (SampledPartition("t", 0, 5, 8, 3), SampledPartition("t", 1, 9, 7, 0))
    )  # a cursor past the high watermark is no lag; a partition no longer listed has no sample
    now = [100.0]
    sampler = WaitSampler(clock=lambda: now[0])
    stored: list[LagSample] = []

    class Sink:
        def record_lag_sample(self, sample: LagSample) -> int:
            stored.append(sample)
            return len(stored)

    polls = [(0.0, False), (30.0, False), (20.0, False), (10.0, True), (60.0, False), (1.0, False)]
    results = []
    for wait, ready in polls:
        now[0] += wait
        results.append(sampler.record(Sink(), positions, ready))
    assert results == [True, False, False, True, True, False]
    assert len(stored) == 3


def test_scales_round_and_clamp() -> None:
    assert [nice_step(v) for v in (0, 3, 4, 7, 30, 4001, 0.3)] == [1.0, 1.0, 1.0, 2.0, 10.0, 2000.0, 0.1]
    plot = Plot.for_values([0, 3.7])
    assert (plot.y_max, plot.y_step) == (4.0, 1.0)
    assert (plot.y(0), plot.y(4), plot.y(9), plot.y(-1)) == (178.0, 12.0, 12.0, 178.0)
    assert plot.band(1, 4) == (202.0, 84.0)  # slot 480 / 4, 70% of it, centred
    assert [number(v) for v in (1250, 0.25, 12.5, 3.0)] == ["1,250", "0.25", "12.5", "3"]


def test_links_into_airflow_and_actors_read_back() -> None:
    assert epoch_page_in_airflow("http://h:8080/", 7) == "http://h:8080/plugin/eo-epochs/eo/epochs/7"
    assert (
        epoch_page_in_airflow("https://h/airflow", 7)
        == "https://h/airflow/plugin/eo-epochs/airflow/eo/epochs/7"
    )
    assert epoch_page_in_airflow(None, 7) == "/plugin/eo-epochs/eo/epochs/7"
    assert airflow_run("eo_stream__p", "manual__2026-01-01T00:00:00+00:00") == (
        "dags/eo_stream__p/runs/manual__2026-01-01T00%3A00%3A00%2B00%3A00"
    )
    assert airflow_task("d", "r", "commit", try_number=2) == "dags/d/runs/r/tasks/commit?try_number=2"
    assert airflow_task("d", "r", "chunk.write", mapped=True) == "dags/d/runs/r/tasks/chunk.write/mapped"
    actor = Actor.task("eo_stream__p", "manual__2026-01-01T00:00:00+00:00", "write", 3)
    assert actor.task_instance() == ("eo_stream__p", "manual__2026-01-01T00:00:00+00:00", "write", 3)
    assert actor.recovering().task_instance() == actor.task_instance()
    assert Actor.task("d", "r/with/slashes", "t", None).task_instance() == ("d", "r/with/slashes", "t", None)
    assert (Actor.cli().task_instance(), Actor("process", "a/b/c try 1").task_instance()) == (None, None)
    assert [rendered_epoch_id(v) for v in (42, " 42 ", None, "{{ ti.xcom_pull() }}")] == [42, 42, None, None]
