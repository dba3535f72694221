"""The backfill DAG's shape (no services): Airflow's Backfill dialog on a timetable that never
schedules, the run types each DAG accepts, the chunk task group and its grid labels."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from airflow.serialization.serialized_objects import DagSerialization

from airflow_provider_eo.dags.backfill_timetable import BackfillOnlyTimetable
from airflow_provider_eo.dags.factory import CHUNK_EPOCH_ID, CHUNK_LABEL, build_dags
from airflow_provider_eo.operators.backfill_chunks import WriteBackfillChunkOperator

pytestmark = pytest.mark.airflow

PIPELINES = {
    "pipelines": [
        {"name": "daily", "topics": ["d"], "hbase": {"table": "d"}, "schedule": "@hourly"},
        {
            "name": "hourly",
            "topics": ["h"],
            "hbase": {"table": "h"},
            "backfill": {"schedule": "30 * * * *", "max_records_per_epoch": 500, "max_parallel_chunks": 3},
        },
        {"name": "other", "topics": ["f"], "hbase": {"table": "f"}, "backfill": {"schedule": "@weekly"}},
    ]
}
ALL_BUT_BACKFILL = ["asset_materialization", "asset_triggered", "manual", "operator_triggered", "scheduled"]


@pytest.fixture
def dags(tmp_path: Path) -> dict:
    path = tmp_path / "pipelines.yaml"
    path.write_text(yaml.safe_dump(PIPELINES, sort_keys=False))
    return build_dags(path)


def run_types(dag: object) -> list[str]:
    return sorted(t.value for t in dag.allowed_run_types)  # type: ignore[attr-defined]


def test_run_types_each_dag_accepts(dags: dict) -> None:
    """The stream DAG refuses backfill runs; the backfill DAG takes manual, operator and
    backfill runs (Airflow then refuses a scheduled run of it too)."""
    for name in ("daily", "hourly", "other"):
        assert run_types(dags[f"eo_stream__{name}"]) == ALL_BUT_BACKFILL
        assert run_types(dags[f"eo_backfill__{name}"]) == ["backfill", "manual", "operator_triggered"]
        assert dags[f"eo_backfill__{name}"].catchup is False


def test_backfill_timetable_gives_intervals_to_backfills_and_no_run_to_the_scheduler(dags: dict) -> None:
    daily, hourly = dags["eo_backfill__daily"], dags["eo_backfill__hourly"]
    assert daily.timetable == BackfillOnlyTimetable("@daily", timezone="UTC")  # the default
    assert hourly.timetable == BackfillOnlyTimetable("30 * * * *", timezone="UTC")
    assert (daily.timetable.periodic, daily.timetable.can_be_scheduled) == (True, False)
    assert daily.timetable.summary == "backfill only: 0 0 * * *"
    assert dags["eo_backfill__other"].timetable.summary == "backfill only: 0 0 * * 0"

    # what the scheduler and Airflow's backfill planner read: the serialized DAG (the
    # provider's plugin registers the timetable, else serialization would fail)
    serialized = DagSerialization.to_dict(hourly)
    assert serialized["dag"]["timetable"] == {
        "__type": "airflow_provider_eo.dags.backfill_timetable.BackfillOnlyTimetable",
        "__var": {"expression": "30 * * * *", "timezone": "UTC"},
    }
    assert serialized["dag"]["allowed_run_types"] == ["backfill", "manual", "operator_triggered"]
    restored = DagSerialization.from_dict(serialized)
    assert restored.next_dagrun_info(last_automated_run_info=None) is None  # never scheduled
    infos = restored.iter_dagrun_infos_between(
        datetime(2026, 3, 1, 9, 0, tzinfo=UTC), datetime(2026, 3, 1, 11, 0, tzinfo=UTC)
    )
    intervals = [i.data_interval for i in infos]
    assert [(d.start.isoformat(), d.end.isoformat()) for d in intervals if d is not None] == [
        ("2026-03-01T09:30:00+00:00", "2026-03-01T10:30:00+00:00"),
        ("2026-03-01T10:30:00+00:00", "2026-03-01T11:30:00+00:00"),
    ]


def test_chunk_group_settings(dags: dict) -> None:
    for name, parallel in (("daily", 1), ("hourly", 3)):
        write = dags[f"eo_backfill__{name}"].get_task("chunk.write")
        assert isinstance(write, WriteBackfillChunkOperator)
        assert write.max_active_tis_per_dagrun == parallel
        assert write.map_index_template == CHUNK_LABEL
        commit = dags[f"eo_backfill__{name}"].get_task("chunk.commit")
        assert commit.map_index_template == CHUNK_LABEL
        assert commit.epoch_id == CHUNK_EPOCH_ID


def test_chunk_label_names_the_chunk_and_its_ranges(dags: dict) -> None:
    plan = [
        [{"topic": "orders", "partition": 0, "start": 0, "end": 40, "records": 40}],
        [
            {"topic": "orders", "partition": 0, "start": 40, "end": 50, "records": 10},
            {"topic": "orders", "partition": 1, "start": 7, "end": 37, "records": 30},
        ],
    ]
    pulled: list[tuple[str, object]] = []

    def xcom_pull(task_ids: str, **kwargs: object) -> object:
        pulled.append((task_ids, kwargs))
        return plan

    env = dags["eo_backfill__daily"].get_template_env()
    ti = SimpleNamespace(map_index=1, xcom_pull=xcom_pull)
    label = env.from_string(CHUNK_LABEL).render(ti=ti)
    assert label == "chunk 2/2, 40 offsets: orders[0]=[40,50) orders[1]=[7,37)"
    assert pulled == [("plan", {})]
    assert (
        env.from_string(CHUNK_LABEL).render(ti=SimpleNamespace(map_index=0, xcom_pull=lambda **_: None)) == ""
    )
