"""The Airflow the demo drives (eo_devtools.demo.served_airflow): the stack's own, or one already
running named by --airflow-home and --dags-folder; refusals name the missing file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eo_devtools.demo.__main__ import main
from eo_devtools.demo.served_airflow import ServedAirflow
from eo_devtools.stack.airflow_config import AirflowConfig


def test_a_running_airflow_is_read_from_its_login_file(tmp_path: Path) -> None:
    home, dags = tmp_path / "airflow", tmp_path / "dags"
    home.mkdir()
    dags.mkdir()
    (home / "login.json").write_text(json.dumps({"url": "http://127.0.0.1:28080", "username": "admin"}))
    (dags / "pipelines.yaml").write_text("pipelines: []\n")
    assert ServedAirflow.running(home, dags) == ServedAirflow(
        "http://127.0.0.1:28080", home / "login.json", dags, home / "logs"
    )
    assert ServedAirflow.running(home, dags).pipelines_file == dags / "pipelines.yaml"


def test_the_stack_airflow_is_its_config(tmp_path: Path) -> None:
    config = AirflowConfig(
        state_dir=tmp_path,
        home=tmp_path / "airflow",
        port=28081,
        database="airflow",
        postgres_dsn="postgresql://u@h:1/d",
        conn_env={},
        dags_folder=tmp_path / "dags",
    )
    assert ServedAirflow.of(config) == ServedAirflow(
        "http://127.0.0.1:28081",
        tmp_path / "airflow" / "login.json",
        tmp_path / "dags",
        tmp_path / "airflow" / "logs",
    )


def test_a_running_airflow_without_its_files_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as raised:
        ServedAirflow.running(tmp_path, tmp_path)
    assert (
        str(raised.value)
        == f"--airflow-home {tmp_path}: no login.json (the admin's login, as eo-stack writes it)"
    )
    (tmp_path / "login.json").write_text(json.dumps({"url": "http://127.0.0.1:1"}))
    with pytest.raises(RuntimeError) as raised:
        ServedAirflow.running(tmp_path, tmp_path / "dags")
    assert str(raised.value) == f"--dags-folder {tmp_path / 'dags'}: no pipelines.yaml"


def test_airflow_home_and_dags_folder_go_together(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--state-dir", str(tmp_path), "--airflow-home", str(tmp_path)])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "python -m eo_devtools.demo: error: --airflow-home and --dags-folder go together"
    )
