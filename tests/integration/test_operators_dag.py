"""The coordinator operators inside Airflow itself: ``dag.test()`` with a SQLite metadata DB.

Runs ``dagtest_coordinator.py`` in a subprocess with a temporary AIRFLOW_HOME, so
Airflow's configuration of this test process is untouched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from tests.kafka_helpers import produce

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

SCRIPT = Path(__file__).with_name("dagtest_coordinator.py")
REPO = Path(__file__).resolve().parents[2]


def run_dag(
    tmp_path: Path, conn_env: dict[str, str], pipelines_file: Path, name: str, runs: int
) -> list[dict]:
    home = tmp_path / "airflow_home"
    dags = tmp_path / "dags"
    home.mkdir()
    dags.mkdir()
    dag_file = dags / SCRIPT.name
    dag_file.write_text(SCRIPT.read_text())
    env = {
        **os.environ,
        **conn_env,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "EO_PIPELINES_FILE": str(pipelines_file),
        "EO_TEST_PIPELINE": name,
        "PYTHONPATH": str(REPO),
    }
    proc = subprocess.run(
        [sys.executable, str(dag_file), str(runs)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-4000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"run_id"')]


def test_dag_test_runs_reserve_write_commit_then_skips(
    stack, tmp_path: Path, kafka_topic_factory: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="dagtest")
    for partition, count in enumerate([3, 1]):
        produce(stack.kafka_bootstrap, topic, [(f"k{i}", b"v") for i in range(count)], partition=partition)
    name = f"p_{uuid.uuid4().hex[:10]}"
    group = f"g-{name}"
    pipelines_file = tmp_path / "pipelines.yaml"
    entry = {"name": name, "topics": [topic], "group_id": group, "hbase": {"table": name}}
    pipelines_file.write_text(yaml.safe_dump({"pipelines": [entry]}))

    first, second = run_dag(tmp_path, stack.conn_env, pipelines_file, name, runs=2)

    assert first["state"] == "success"
    assert first["tasks"] == dict.fromkeys(["recover", "reserve", "write", "commit"], "success")
    # second run: no new data -> reserve skipped, and everything downstream of it too
    assert second["state"] == "success"
    skipped = dict.fromkeys(["reserve", "write", "commit"], "skipped")
    assert second["tasks"] == {"recover": "success", **skipped}
    with Ledger(stack.ledger_dsn) as ledger:
        epochs = ledger.epochs(EpochFilter(pipeline=name))
        assert [(e.state.value, e.dag_id, e.run_id) for e in epochs] == [
            ("COMMITTED", f"eo_test_{name}", first["run_id"])
        ]
        assert [(r.topic, r.partition, r.start, r.end) for r in epochs[0].ranges] == [
            (topic, 0, 0, 3),
            (topic, 1, 0, 1),
        ]
        # the history names each task instance Airflow ran (the write stand-in: its process)
        task = f"eo_test_{name}/{first['run_id']}"
        assert [(t.from_state, t.to_state, t.actor_kind) for t in ledger.history(epochs[0].epoch_id)] == [
            (None, "RESERVED", "task"),
            ("RESERVED", "WRITTEN", "process"),
            ("WRITTEN", "COMMITTED", "task"),
        ]
        steps = ledger.history(epochs[0].epoch_id)
        assert (steps[0].actor, steps[2].actor) == (f"{task}/reserve try 1", f"{task}/commit try 1")
    for key, value in stack.conn_env.items():
        monkeypatch.setenv(key, value)
    assert EoKafkaHook().committed_offsets(group, [(topic, 0), (topic, 1)]) == {(topic, 0): 3, (topic, 1): 1}
