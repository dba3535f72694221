"""A downstream DAG scheduled on a pipeline's table Asset runs after a stream epoch commits,
and reads the epoch summary from the triggering event: through the session's real Airflow
(scheduler, dag-processor, LocalExecutor: the ``airflow_server`` fixture), Spark, the
ledger, Apache Kafka and Apache HBase. The downstream DAG has the shape of README's
"Downstream DAGs" example (its task returns the extras, so the test can read them).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import happybase
import pytest

from airflow_provider_eo.dags.factory import stream_dag_id
from airflow_provider_eo.ledger import EpochState, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from eo_devtools.demo.sample_events import produce_records
from tests.conftest import StackInfo

if TYPE_CHECKING:
    from tests.airflow_server import AirflowServer

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.integration]

DOWNSTREAM_DAG = '''
from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, Asset, task

ORDERS = Asset("{uri}")

with DAG("{dag_id}", schedule=[ORDERS], start_date=datetime(2026, 1, 1), catchup=False):

    @task(inlets=[ORDERS])
    def consume(*, triggering_asset_events=None):
        """Every epoch this run was triggered by (deduplicate on pipeline and epoch_id)."""
        return [event.extra for event in triggering_asset_events[ORDERS]]

    consume()
'''


def wait_for_first_run(server: AirflowServer, dag_id: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while True:
        runs = server.api("GET", f"dags/{quote(dag_id)}/dagRuns")["dag_runs"]
        if runs:
            (run,) = runs
            assert run["run_type"] == "asset_triggered", run
            return str(run["dag_run_id"])
        if time.monotonic() > deadline:
            raise TimeoutError(f"{dag_id}: no run within {timeout}s")
        time.sleep(1)


def test_downstream_dag_runs_after_a_stream_epoch_and_sees_its_summary(
    stack: StackInfo, airflow_server: AirflowServer, kafka_topic_factory: Any, ledger: Ledger
) -> None:
    tag = uuid.uuid4().hex[:10]
    topic = kafka_topic_factory(partitions=2, prefix="eo-asset")
    pipeline, table = f"asset_{tag}", f"asset_{tag}"
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        connection.create_table(table, {"d": {}})
    finally:
        connection.close()
    produce_records(
        stack.kafka_bootstrap,
        topic,
        2,
        iter([(f"k{i}".encode(), json.dumps({"i": i}).encode()) for i in range(12)]),
    )
    uri = f"hbase://eo_hbase/default/{table}"
    downstream = f"eo_downstream_{tag}"
    (airflow_server.dags_folder / f"{downstream}.py").write_text(
        DOWNSTREAM_DAG.format(uri=uri, dag_id=downstream)
    )
    airflow_server.add_pipeline(
        {
            "name": pipeline,
            "topics": [topic],
            "hbase": {"table": table},
        }
    )
    stream = stream_dag_id(pipeline)
    airflow_server.wait_for_dag(stream)
    airflow_server.wait_for_dag(downstream)
    assert airflow_server.api("GET", f"dags/{downstream}/dagRuns")["dag_runs"] == []

    run_id = airflow_server.trigger(stream)
    assert airflow_server.wait_for_run(stream, run_id) == "success", airflow_server.task_states(
        stream, run_id
    )
    (epoch,) = ledger.epochs(EpochFilter(pipeline=pipeline))
    assert epoch.state is EpochState.COMMITTED and epoch.run_id == run_id and epoch.committed_at
    assert epoch.written_at is not None and epoch.metrics is not None

    downstream_run = wait_for_first_run(airflow_server, downstream)
    assert airflow_server.wait_for_run(downstream, downstream_run) == "success"
    run_path = f"dags/{downstream}/dagRuns/{quote(downstream_run, safe='')}"
    xcom = airflow_server.api("GET", f"{run_path}/taskInstances/consume/xcomEntries/return_value")
    assert xcom["value"] == [
        {
            "epoch_id": epoch.epoch_id,
            "pipeline": pipeline,
            "kind": "stream",
            "state": "COMMITTED",
            "dag_id": stream,
            "run_id": run_id,
            "ranges": [
                {
                    "topic": r.topic,
                    "partition": r.partition,
                    "start": r.start,
                    "end": r.end,
                    "records": r.end - r.start,
                }
                for r in epoch.ranges
            ],
            "records_total": 12,
            "metrics": epoch.metrics,
            "error": None,
            "created_at": epoch.created_at.isoformat(),
            "written_at": epoch.written_at.isoformat(),
            "committed_at": epoch.committed_at.isoformat(),
            "aborted_at": None,
            "bad_records": 0,
        }
    ]
