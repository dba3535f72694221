"""``eo-ledger seek`` asks the session's real Airflow (``airflow_server``) whether the
pipeline's stream DAG is paused, through ``AIRFLOW_CONN_AIRFLOW_API`` built as
``eo-stack env`` builds it: refused (exit 2, nothing changed) while the DAG runs and for a
DAG Airflow does not know; carried out once the DAG is paused. ``eo-ledger reset --to-group``
asks the same: refused once the DAG is unpaused again, carried out when paused. The other seek and reset
cases are in tests/integration/test_ledger_seek.py (stated ``--stream-dag-paused``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.dag_ids import stream_dag_id
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from eo_devtools.stack.connections import airflow_api_connection
from tests.airflow_server import AirflowServer
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, make_spec, run_epoch
from tests.kafka_helpers import produce

pytestmark = [pytest.mark.airflow, pytest.mark.integration]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


def test_seek_waits_for_the_stream_dag_to_be_paused_in_airflow(
    stack: StackInfo,
    airflow_server: AirflowServer,
    kafka_topic_factory: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="seek-af")
    produce(stack.kafka_bootstrap, topic, [(f"k{i}", "{}") for i in range(10)], partition=0)
    spec = make_spec(topics=[topic], per_partition=4)
    dag_id = stream_dag_id(spec.name)
    airflow_server.add_pipeline(
        {"name": spec.name, "topics": [topic], "group_id": spec.group_id, "hbase": {"table": spec.name}}
    )
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(
        "AIRFLOW_CONN_AIRFLOW_API",
        airflow_api_connection(airflow_server.url, airflow_server.username, airflow_server.password),
    )
    hook = EoKafkaHook()
    tp = (topic, 0)
    with fresh_database(stack.ledger_dsn) as dsn:
        monkeypatch.setenv("EO_LEDGER_DSN", dsn)
        with Ledger(dsn) as ledger:
            assert run_epoch(ledger, spec, hook, "r1") is not None
            airflow_server.wait_for_dag(dag_id)
            argv = ("seek", "--pipeline", spec.name, "--to", "latest", "--reason", "skip the backlog",
                    "--yes", "--pipelines-file", str(airflow_server.pipelines_file))  # fmt: skip

            assert airflow_server.api("GET", f"dags/{quote(dag_id)}")["is_paused"] is False
            assert cli(capsys, *argv) == (
                2,
                {
                    "error": f"the stream DAG {dag_id} is not paused: pause it "
                    f"(`airflow dags pause {dag_id}` or the UI), wait for its running epoch to finish, "
                    "then run again",
                    "type": "Refused",
                },
            )
            code, error = cli(capsys, "seek", "--pipeline", "not-in-airflow", "--to", "latest",
                              "--reason", "r", "--yes", "--group-id", "g")  # fmt: skip
            assert (code, error["type"]) == (2, "Refused")
            assert error["error"].startswith(
                f"cannot ask Airflow whether {stream_dag_id('not-in-airflow')} is paused (Airflow API GET "
                f"{airflow_server.url}/api/v2/dags/{stream_dag_id('not-in-airflow')}: HTTP 404"
            )
            assert error["error"].endswith("pause the DAG, then run again with --stream-dag-paused")
            assert ledger.cursors(spec.name) == {tp: 4}
            assert ledger.gaps(spec.name) == []
            assert hook.committed_offsets(spec.group_id, [tp]) == {tp: 4}

            airflow_server.api("PATCH", f"dags/{quote(dag_id)}", {"is_paused": True})
            code, answer = cli(capsys, *argv)
            assert (
                code,
                answer["partitions"],
                answer["gaps_recorded"],
                answer["group_offsets_published"],
            ) == (
                0,
                [{"topic": topic, "partition": 0, "from": 4, "to": 10, "direction": "forward"}],
                [{"topic": topic, "partition": 0, "start": 4, "end": 10}],
                [{"topic": topic, "partition": 0, "offset": 10}],
            )
            assert ledger.cursors(spec.name) == {tp: 10}
            assert hook.committed_offsets(spec.group_id, [tp]) == {tp: 10}

            # reset --to-group asks the same question: refused once the DAG runs again
            other = f"{spec.group_id}-other"
            hook.commit_offsets(other, {tp: 6})
            reset = ("reset", "--pipeline", spec.name, "--to-group", "--group-id", other, "--reason", "align",
                     "--yes", "--pipelines-file", str(airflow_server.pipelines_file))  # fmt: skip
            airflow_server.api("PATCH", f"dags/{quote(dag_id)}", {"is_paused": False})
            code, refused = cli(capsys, *reset)
            assert (code, refused["type"]) == (2, "Refused")
            assert refused["error"].startswith(f"the stream DAG {dag_id} is not paused")
            assert ledger.cursors(spec.name) == {tp: 10}
            airflow_server.api("PATCH", f"dags/{quote(dag_id)}", {"is_paused": True})
            code, answer = cli(capsys, *reset)
            assert (code, answer["partitions"]) == (
                0,
                [{"topic": topic, "partition": 0, "from": 10, "to": 6, "direction": "backward"}],
            )
            assert ledger.cursors(spec.name) == {tp: 6}
