"""The driver's environment file: what a cluster-mode driver loads before anything else,
and the private file the operator ships it in."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.operators.submission_files import private_environment_file
from airflow_provider_eo.spark.driver.application import main
from airflow_provider_eo.spark.driver.driver_environment import (
    DRIVER_ENV_FILE,
    environment_file_text,
    load_driver_environment,
)
from airflow_provider_eo.spark.driver.write_epoch import ExitCode

SECRET = "Zq7hunter2xyz"
ENV = {"AIRFLOW_CONN_EO_LEDGER": f"postgresql://eo:{SECRET}@db:5432/eo", "EO_PIPELINE_SPEC": '{"name": "p"}'}


def test_the_shipped_file_is_private_and_gone_after_the_submission() -> None:
    with private_environment_file(ENV) as path:
        assert Path(path).name == DRIVER_ENV_FILE
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(Path(path).parent).st_mode) == 0o700
        assert Path(path).read_text() == environment_file_text(ENV)
    assert not Path(path).parent.exists()


def test_the_driver_loads_the_file_from_its_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / DRIVER_ENV_FILE).write_text(environment_file_text(ENV))
    monkeypatch.chdir(tmp_path)
    for name in ENV:  # absent now, and again after the test (monkeypatch records the first setenv)
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    assert load_driver_environment(DRIVER_ENV_FILE) == sorted(ENV)
    assert {name: os.environ[name] for name in ENV} == ENV


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("../eo-driver-env.json", None, "must be a file name, not a path"),
        ("missing.json", None, "not in the working directory"),
        (DRIVER_ENV_FILE, f"not json {SECRET}", "unreadable: JSONDecodeError"),
        (DRIVER_ENV_FILE, '{"A": 1}', "not a JSON object of strings"),
    ],
)
def test_a_bad_file_is_refused_without_showing_its_content(
    tmp_path: Path, name: str, text: str | None, problem: str
) -> None:
    if text is not None:
        (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=problem) as info:
        load_driver_environment(name, tmp_path)
    assert SECRET not in str(info.value)


def test_the_application_exits_invalid_without_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(logging.getLogger("airflow_provider_eo"), "handlers", [])  # log to this stderr
    code = main(["--pipeline", "p", "--epoch-id", "4", "--driver-env-file", DRIVER_ENV_FILE])
    assert code == ExitCode.INVALID
    assert (
        f"pipeline=p epoch_id=4: cannot write: driver environment file '{DRIVER_ENV_FILE}': "
        f"not in the working directory {tmp_path}"
    ) in capsys.readouterr().err
