"""One pipeline spec per task run: the pipelines file changed between the moment the DAG
was built (what a task's process does first) and the moment its operators run changes
nothing for that run. Every operator uses the spec the DAG factory parsed, and the write
operator ships that spec to the Spark driver, which never reads the YAML.

Which spec a run uses: the one parsed when the task's process loaded the DAG file. A
pipelines file changed afterwards applies to the next task processes, never half-way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from airflow_provider_eo.config.loader import PIPELINE_SPEC_ENV
from airflow_provider_eo.dag_ids import stream_dag_id
from airflow_provider_eo.dags.factory import build_dags
from airflow_provider_eo.spark.driver.task_settings import run_pipeline_spec
from tests.integration.operator_support import conn_env_fixture, fill  # noqa: F401 (fixtures)
from tests.task_context import task_context

pytestmark = pytest.mark.integration


def test_a_pipelines_file_changed_after_parse_leaves_the_run_on_the_parsed_spec(
    stack, tmp_path: Path, kafka_topic_factory, monkeypatch: pytest.MonkeyPatch, conn_env: None
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="onespec")
    fill(stack, topic, [10])
    path = tmp_path / "pipelines.yaml"

    def declare(cap: int, batch_size: int, table: str) -> None:
        entry = {
            "name": "onespec",
            "topics": [topic],
            "hbase": {"table": table},
            "caps": {"max_records_total": cap},
            "batch_size": batch_size,
        }
        path.write_text(yaml.safe_dump({"pipelines": [entry]}))

    declare(cap=3, batch_size=7, table="parsed_table")
    dag = build_dags(path)[stream_dag_id("onespec")]
    declare(cap=8, batch_size=9, table="changed_table")  # after the parse, before the run

    summary = dag.get_task("reserve").execute(task_context())  # type: ignore[arg-type]
    assert [(r["start"], r["end"]) for r in summary["ranges"]] == [(0, 3)]  # the parsed cap, not 8

    env = dag.get_task("write").application_env()  # type: ignore[attr-defined]
    shipped = json.loads(env[PIPELINE_SPEC_ENV])
    assert (shipped["batch_size"], shipped["hbase_table"], shipped["caps"]["max_records_total"]) == (
        7,
        "parsed_table",
        3,
    )
    monkeypatch.setenv(PIPELINE_SPEC_ENV, env[PIPELINE_SPEC_ENV])  # what the Spark driver reads
    assert run_pipeline_spec("onespec").hbase_table == "parsed_table"  # the driver never reads the file
