"""The local stack's Airflow (the session's ``airflow_server``): login, DAG discovery, a scheduled run.

Everything goes through the public REST API v2 with the credentials of the login file,
as the demo and a newcomer's scripts do; the run's outcome is checked exactly in the
ledger, in HBase and in the consumer group. ``eo-stack up``/``down`` with Airflow is
checked in test_devstack.py (its own stack).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import happybase
import pytest

from airflow_provider_eo.config import load_pipelines
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from eo_devtools.demo.expected_state import ProducedRecord, expected_rows
from eo_devtools.demo.sample_events import produce_records
from eo_devtools.demo.verification import scan_table, verify_pipeline
from eo_devtools.stack.airflow_api import AirflowApiError, AirflowClient
from eo_devtools.stack.process import group_members, kill_with_groups, processes_with_env
from tests.airflow_server import AirflowServer
from tests.conftest import StackInfo
from tests.integration.ledger_support import stack_kafka_hook
from tests.spark_startup import spark_conf

pytestmark = [pytest.mark.integration, pytest.mark.airflow, pytest.mark.spark]

EVENTS: list[tuple[bytes | None, bytes | None]] = [
    (b"u1", b'{"n": 1, "c": "DE"}'),
    (b"u2", b'{"n": 2}'),
    (b"u1", b'{"n": 3}'),
    (b"u3", b'{"n": 4}'),
    (b"u2", None),  # tombstone
    (b"u4", b"{not json"),  # bad record: dead letter
    (b"u5", b'{"n": 5, "tags": ["a"]}'),
]


def test_login_file_is_private_and_its_credentials_get_a_token(airflow_server: AirflowServer) -> None:
    login_file = airflow_server.home / "login.json"
    assert stat.S_IMODE(login_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((airflow_server.home / "secrets.json").stat().st_mode) == 0o600
    login = json.loads(login_file.read_text())
    assert login == {"url": airflow_server.url, "username": "admin", "password": airflow_server.password}

    client = AirflowClient.from_login_file(login_file)
    assert client.api("GET", "dags/eo_recovery")["dag_id"] == "eo_recovery"
    wrong = AirflowClient(login["url"], "admin", login["password"] + "x")
    with pytest.raises(AirflowApiError) as refused:
        wrong.token()
    assert refused.value.status == 401
    with pytest.raises(urllib.error.HTTPError) as anonymous:
        urllib.request.urlopen(f"{airflow_server.url}/api/v2/dags", timeout=10)
    assert anonymous.value.code == 401


def test_secrets_stay_off_command_lines_and_service_logs(airflow_server: AirflowServer) -> None:
    secrets = json.loads((airflow_server.home / "secrets.json").read_text())
    assert set(secrets) == {"jwt_secret", "api_secret_key", "fernet_key", "db_password", "admin_password"}
    pids = [pid for s in airflow_server.airflow.status().values() if (pid := s["pid"])]
    assert len(pids) == 4
    for pid in pids:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        assert not [name for name, value in secrets.items() if value in cmdline], cmdline
    for service in ("api-server", "scheduler", "dag-processor", "triggerer"):
        text = airflow_server.log(service)
        assert not [name for name, value in secrets.items() if value in text], service


def _pipeline(tag: str) -> dict[str, Any]:
    return {
        "name": f"af_{tag}",
        "topics": [f"eo-af-{tag}"],
        "group_id": f"eo-af-{tag}",
        "hbase": {"table": f"af_{tag}", "column_family": "d"},
        "bad_records": "dead_letter",
        "spark": {"split_size": 100, "conf": spark_conf()},
    }


def test_a_pipeline_added_to_the_served_file_runs_through_the_scheduler_exactly(
    airflow_server: AirflowServer, stack: StackInfo, kafka_topic_factory: Any
) -> None:
    tag = uuid.uuid4().hex[:10]
    entry = _pipeline(tag)
    topic = kafka_topic_factory(partitions=2, prefix="eo-af")
    entry["topics"] = [topic]
    produced: list[ProducedRecord] = produce_records(stack.kafka_bootstrap, topic, 2, iter(EVENTS))
    admin = happybase.Connection(stack.hbase_host, stack.hbase_port)
    admin.create_table(entry["hbase"]["table"], {"d": {}})
    admin.close()  # the Thrift server drops connections idle for 60 s: a fresh one reads below
    airflow_server.add_pipeline(entry)
    dag_id = f"eo_stream__{entry['name']}"
    airflow_server.wait_for_dag(dag_id)

    run_id = airflow_server.trigger(dag_id)
    state = airflow_server.wait_for_run(dag_id, run_id, timeout=900)
    assert state == "success", airflow_server.task_states(dag_id, run_id)
    assert airflow_server.task_states(dag_id, run_id) == {
        "recover": "success",
        "reserve": "success",
        "write": "success",
        "commit": "success",
    }

    spec = load_pipelines(airflow_server.pipelines_file)[entry["name"]]
    ends = {(r.topic, r.partition): r.offset + 1 for r in sorted(produced, key=lambda r: r.offset)}
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    with Ledger(stack.ledger_dsn) as ledger:
        (epoch,) = ledger.epochs(EpochFilter(pipeline=spec.name))
        assert (epoch.state, epoch.kind) == (EpochState.COMMITTED, EpochKind.STREAM)
        assert sorted((r.topic, r.partition, r.start, r.end) for r in epoch.ranges) == sorted(
            (t, p, 0, end) for (t, p), end in ends.items()
        )
        assert ledger.cursors(spec.name) == ends
        assert ledger.dead_letter_count(spec.name) == 1
        report = verify_pipeline(spec, produced, ledger=ledger, offsets=stack_kafka_hook(stack), hbase=hbase)
    assert report.problems == []
    assert (
        scan_table(hbase, spec.hbase_table)
        == expected_rows(produced, "d")
        == {
            b"u1": {b"d:n": b"3", b"d:c": b"DE"},
            b"u3": {b"d:n": b"4"},
            b"u5": {b"d:n": b"5", b"d:tags": b'["a"]'},
        }
    )
    hbase.close()

    page = urllib.request.Request(
        f"{airflow_server.url}/eo/api/epochs?pipeline={spec.name}",
        headers={"Authorization": f"Bearer {airflow_server.client.token()}"},
    )
    with urllib.request.urlopen(page, timeout=10) as answer:
        epochs = json.loads(answer.read())
    assert [(e["epoch_id"], e["state"], e["kind"], e["dag_id"], e["run_id"]) for e in epochs] == [
        (epoch.epoch_id, "COMMITTED", "stream", dag_id, run_id)
    ]


def test_down_sweep_kills_what_carries_the_marker_and_its_process_group(tmp_path: Path) -> None:
    """What ``LocalAirflow.down`` does after the services stopped: a task runs in a process
    group of its own, and a renamed process no longer shows the inherited marker."""
    marker = f"marked-{uuid.uuid4().hex}"
    script = "env -u EO_TEST_SWEEP sleep 300 & exec sleep 300"  # the child drops the marker
    leader = subprocess.Popen(
        ["sh", "-c", script], env={**os.environ, "EO_TEST_SWEEP": marker}, start_new_session=True
    )
    deadline = time.monotonic() + 10
    while len(group_members(leader.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    members = group_members(leader.pid)
    assert len(members) == 2
    assert processes_with_env("EO_TEST_SWEEP", marker) == [leader.pid]

    kill_with_groups(processes_with_env("EO_TEST_SWEEP", marker))
    assert leader.wait(10) == -9
    assert group_members(leader.pid) == []
    assert processes_with_env("EO_TEST_SWEEP", marker) == []
