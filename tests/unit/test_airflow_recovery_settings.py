"""The stack's Airflow gets the settings that recover fast (docs/scale.md), tests' overrides win."""

from __future__ import annotations

from pathlib import Path

import pytest

from eo_devtools.stack.airflow_config import FAST_SETTINGS, RECOVERY_SETTINGS, AirflowConfig


def _config(base: Path, settings: dict[str, str]) -> AirflowConfig:
    return AirflowConfig(
        state_dir=base,
        home=base / "airflow",
        port=1,
        database="airflow",
        postgres_dsn="postgresql://u@127.0.0.1:1/postgres",
        conn_env={},
        dags_folder=base / "dags",
        settings=settings,
    )


def test_every_process_gets_the_recovery_settings_unless_overridden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in RECOVERY_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    assert dict(RECOVERY_SETTINGS) == {
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60",
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
        "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "30",
        "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "30",
    }
    env = _config(tmp_path, {}).environment()
    assert {name: env[name] for name in RECOVERY_SETTINGS} == RECOVERY_SETTINGS

    monkeypatch.setenv("AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL", "120")
    env = _config(tmp_path, dict(FAST_SETTINGS)).environment()
    assert env["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT"] == "30"  # FAST_SETTINGS
    assert env["AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL"] == "2"
    assert env["AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL"] == "120"  # the operator's own
