"""Airflow's own Backfill (``POST /api/v2/backfills``, what the UI's Backfill dialog sends) on
the session's real scheduler (``airflow_server``), with Spark, the ledger, Kafka and HBase real.

Records are stamped around two hourly intervals. A backfill over those two intervals of
``eo_backfill__<p>`` makes two runs; each rewrites exactly the records whose Kafka
timestamps fall in its data interval (the second as two chunks), nothing before, between
or after. The stream DAG refuses a backfill, and the scheduler never starts a run of the
backfill DAG by itself.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import happybase
import pytest

from airflow_provider_eo.dags.factory import backfill_dag_id, stream_dag_id
from airflow_provider_eo.ledger import EpochKind, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from eo_devtools.stack.airflow_api import AirflowApiError
from tests.airflow_server import AirflowServer
from tests.conftest import StackInfo
from tests.kafka_helpers import produce

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.integration]


def test_backfill_dialog_rewrites_exactly_each_interval(
    stack: StackInfo, airflow_server: AirflowServer, kafka_topic_factory: Any
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="eo-bfd")
    name = f"bfd_{uuid.uuid4().hex[:8]}"
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=5)
    ms = lambda moment: int(moment.timestamp() * 1000)  # noqa: E731
    stamped = [  # offset: key, CreateTime
        ("early", hour - timedelta(minutes=30)),  # 0: the interval before the range
        ("k0", hour),  # 1: exactly at the first interval's start: in
        ("k1", hour + timedelta(minutes=30)),  # 2
        ("k2", hour + timedelta(hours=1, seconds=10)),  # 3: second interval
        ("k3", hour + timedelta(hours=1, minutes=20)),  # 4
        ("k4", hour + timedelta(hours=2) - timedelta(milliseconds=1)),  # 5: last ms of it: in
        ("late", hour + timedelta(hours=2)),  # 6: exactly at its end: out
        ("later", hour + timedelta(hours=3)),  # 7
    ]
    produce(
        stack.kafka_bootstrap,
        topic,
        [(key, json.dumps({"key": key})) for key, _ in stamped],
        partition=0,
        timestamps=[ms(moment) for _, moment in stamped],
    )
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        connection.create_table(name, {"d": {}})
    finally:
        connection.close()
    airflow_server.add_pipeline(
        {
            "name": name,
            "topics": [topic],
            "group_id": f"eo-{name}",
            "hbase": {"table": name},
            "schedule": None,  # no stream run writes the topic meanwhile
            "backfill": {"schedule": "@hourly", "max_records_per_epoch": 2},
        }
    )
    stream, backfill = stream_dag_id(name), backfill_dag_id(name)
    airflow_server.wait_for_dag(stream)
    airflow_server.wait_for_dag(backfill)

    # the stream DAG refuses a backfill: Airflow's own answer to the dialog's request (it checks
    # allowed_run_types first; a non-periodic schedule alone would say "non-periodic schedule")
    body = {"dag_id": stream, "from_date": hour.isoformat(), "to_date": hour.isoformat()}
    with pytest.raises(AirflowApiError) as refused:
        airflow_server.api("POST", "backfills", body)
    assert refused.value.status == 400
    assert json.loads(refused.value.body) == {
        "detail": f"Dag with dag_id: '{stream}' does not allow backfill runs"
    }
    dags = {d: airflow_server.api("GET", f"dags/{d}") for d in (stream, backfill)}
    assert {d: (info["is_backfillable"], info["timetable_periodic"]) for d, info in dags.items()} == {
        stream: (False, False),
        backfill: (True, True),
    }
    assert dags[backfill]["timetable_summary"] == "backfill only: 0 * * * *"

    # the dialog's request on the backfill DAG: two hourly runs, [hour, +1h) and [+1h, +2h)
    created = airflow_server.api(
        "POST",
        "backfills",
        {
            "dag_id": backfill,
            "from_date": hour.isoformat(),
            "to_date": (hour + timedelta(hours=1)).isoformat(),
        },
    )
    runs = airflow_server.api("GET", f"dags/{backfill}/dagRuns?order_by=logical_date")["dag_runs"]
    assert [(r["run_type"], r["data_interval_start"], r["data_interval_end"]) for r in runs] == [
        ("backfill", _iso(hour), _iso(hour + timedelta(hours=1))),
        ("backfill", _iso(hour + timedelta(hours=1)), _iso(hour + timedelta(hours=2))),
    ]
    run_ids = [r["dag_run_id"] for r in runs]
    assert [airflow_server.wait_for_run(backfill, run_id, timeout=600) for run_id in run_ids] == [
        "success",
        "success",
    ]
    assert [airflow_server.task_states(backfill, run_id) for run_id in run_ids] == [
        {"plan": "success", "chunk.write[0]": "success", "chunk.commit[0]": "success", "release": "success"},
        {
            "plan": "success",
            "chunk.write[0]": "success",
            "chunk.write[1]": "success",
            "chunk.commit[0]": "success",
            "chunk.commit[1]": "success",
            "release": "success",
        },
    ]
    # the grid's label of each chunk instance
    path = f"dags/{backfill}/dagRuns/{quote(run_ids[1], safe='')}/taskInstances?task_id=chunk.write"
    labels = sorted(ti["rendered_map_index"] for ti in airflow_server.api("GET", path)["task_instances"])
    assert labels == [f"chunk 1/2, 2 offsets: {topic}[0]=[3,5)", f"chunk 2/2, 1 offsets: {topic}[0]=[5,6)"]

    with Ledger(stack.ledger_dsn) as ledger:
        epochs = ledger.epochs(EpochFilter(pipeline=name))
    # the two runs may write at the same time: compare in range order, not epoch-id order
    found = [(e.kind, e.state.value, e.run_id, [(r.start, r.end) for r in e.ranges]) for e in epochs]
    assert sorted(found, key=lambda e: e[3]) == [
        (EpochKind.BACKFILL, "COMMITTED", run_ids[0], [(1, 3)]),
        (EpochKind.BACKFILL, "COMMITTED", run_ids[1], [(3, 5)]),
        (EpochKind.BACKFILL, "COMMITTED", run_ids[1], [(5, 6)]),
    ]
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        rows = dict(connection.table(name).scan())
    finally:
        connection.close()
    assert rows == {key.encode(): {b"d:key": key.encode()} for key in ("k0", "k1", "k2", "k3", "k4")}

    # no run of the backfill DAG but the backfill's: the scheduler never proposes one
    assert airflow_server.api("GET", f"backfills/{created['id']}")["dag_id"] == backfill
    again = airflow_server.api("GET", f"dags/{backfill}/dagRuns")["dag_runs"]
    assert sorted(r["run_type"] for r in again) == ["backfill", "backfill"]
    details = airflow_server.api("GET", f"dags/{backfill}")
    assert (details["next_dagrun_logical_date"], details["next_dagrun_run_after"]) == (None, None)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
