"""The stack's executor choice: flags, the record, refusals, and where the Celery secrets go.

No process is started: a refusal must come before anything runs.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from eo_devtools.stack.airflow_config import AirflowConfig
from eo_devtools.stack.airflow_executor import AirflowExecutor, ExecutorError, celery_settings
from eo_devtools.stack.celery_worker import CeleryWorkerService
from eo_devtools.stack.cli import _parser, main, requested_executor
from eo_devtools.stack.redis_broker import RedisService, redis_password
from eo_devtools.stack.stack import LocalStack

CELERY = AirflowExecutor("celery", 2)


def _config(tmp_path: Path) -> AirflowConfig:
    return AirflowConfig(
        state_dir=tmp_path,
        home=tmp_path / "airflow",
        port=20001,
        database="airflow",
        postgres_dsn="postgresql://eo:pw@127.0.0.1:20002/eo",
        conn_env={},
        dags_folder=tmp_path / "dags",
    )


def test_up_without_redis_server_names_the_package_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    state = tmp_path / "state"
    assert main(["up", "--state-dir", str(state), "--executor", "celery", "--celery-workers", "2"]) == 1
    assert capsys.readouterr().err == (
        "eo-stack up: redis: redis-server not found on PATH; the Celery executor needs Redis as its "
        "broker: install Debian's redis-server (scripts/setup.sh does: apt-get install redis-server)\n"
    )
    assert list((state / "pids").iterdir()) == []
    assert not (state / "postgres").exists()


def test_flags_choose_the_executor_and_the_record_keeps_it(tmp_path: Path) -> None:
    parse = _parser().parse_args
    assert requested_executor(parse(["up"]), CELERY) is None
    assert requested_executor(parse(["up", "--executor", "celery"]), AirflowExecutor()) == CELERY
    assert requested_executor(parse(["up", "--celery-workers", "3"]), CELERY) == AirflowExecutor("celery", 3)
    assert requested_executor(parse(["up", "--executor", "local"]), CELERY) == AirflowExecutor()
    assert AirflowExecutor.from_record(CELERY.to_record()) == CELERY
    (tmp_path / "stack.json").write_text(json.dumps({"ports": {}}))
    assert LocalStack(tmp_path).executor == AirflowExecutor()  # an old record: the LocalExecutor


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--executor", "celery", "--celery-workers", "0"], "--celery-workers must be from 1 to 4, got 0"),
        (["--executor", "celery", "--celery-workers", "5"], "--celery-workers must be from 1 to 4, got 5"),
        (["--celery-workers", "2"], "--celery-workers needs --executor celery"),
    ],
)
def test_bad_counts_are_refused_naming_the_flag(flags: list[str], message: str) -> None:
    with pytest.raises(ExecutorError, match=message):
        requested_executor(_parser().parse_args(["up", *flags]), AirflowExecutor())


def test_another_executor_while_airflow_runs_is_refused(tmp_path: Path) -> None:
    record = {"ports": {"postgres": 20002, "airflow-api": 20001}, "airflow": AirflowExecutor().to_record()}
    (tmp_path / "stack.json").write_text(json.dumps(record))
    (tmp_path / "pids").mkdir()
    (tmp_path / "pids" / "airflow-scheduler.pid").write_text(f"{os.getpid()}\n")  # a live pid
    with pytest.raises(
        ExecutorError, match=re.escape("runs LocalExecutor (airflow-scheduler running); run eo-stack down")
    ):
        LocalStack(tmp_path).up(airflow=True, executor=CELERY)
    assert json.loads((tmp_path / "stack.json").read_text()) == record  # nothing changed


def test_celery_secrets_travel_in_a_private_file_and_the_environment_never_argv(tmp_path: Path) -> None:
    broker = RedisService(tmp_path, {"redis": 20003})
    broker.prepare()
    password = redis_password(tmp_path)
    assert stat.S_IMODE(broker.config_path.stat().st_mode) == 0o600
    assert f"requirepass {password}\n" in broker.config_path.read_text()
    assert broker.argv()[1:] == [str(broker.config_path)]

    config = _config(tmp_path)
    settings = celery_settings(config, broker.url)
    config = replace(config, settings=settings)
    worker = CeleryWorkerService(config, 1, concurrency=1)
    db_password = config.secrets()["db_password"]
    assert password not in " ".join(worker.argv()) and db_password not in " ".join(worker.argv())
    environment = worker.environment()
    assert environment["AIRFLOW__CELERY__BROKER_URL"] == f"redis://:{password}@127.0.0.1:20003/0"
    assert environment["AIRFLOW__CELERY__RESULT_BACKEND"].startswith(
        f"db+postgresql+psycopg2://airflow:{db_password}@127.0.0.1:20002/airflow"
    )
    assert environment["EO_STACK_CELERY_HOSTNAME"] == worker.node
    assert worker.node.startswith("worker1@")
