"""The Airflow the demo drives: the local stack's own, or one already running.

``python -m eo_devtools.demo`` starts the stack's Airflow (its config: :meth:`ServedAirflow.of`);
with ``--airflow-home DIR --dags-folder DIR`` it drives an Airflow that is already running
on the stack instead (:meth:`ServedAirflow.running`), as the test suite does with its
session Airflow (tests/airflow/test_demo.py). Either way the demo reaches it only as a user
would: its URL and admin login (the private ``login.json`` in its AIRFLOW_HOME), the
pipelines file it serves, and the folder of its task logs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from eo_devtools.stack.airflow_config import AirflowConfig


@dataclass(frozen=True)
class ServedAirflow:
    """Where the demo's Airflow is: API and UI ``url``, ``login_path`` (url, username, password;
    mode 600), the ``dags_folder`` it serves and its task ``log_folder``."""

    url: str
    login_path: Path
    dags_folder: Path
    log_folder: Path

    @property
    def pipelines_file(self) -> Path:
        """The pipelines file the DAG template of ``dags_folder`` reads."""
        return self.dags_folder / "pipelines.yaml"

    @classmethod
    def of(cls, config: AirflowConfig) -> ServedAirflow:
        """The Airflow of ``config`` (the local stack's)."""
        return cls(config.url, config.login_path, config.dags_folder, config.home / "logs")

    @classmethod
    def running(cls, home: Path, dags_folder: Path) -> ServedAirflow:
        """An Airflow already running with AIRFLOW_HOME ``home`` (task logs in ``home/logs``),
        serving ``dags_folder``. Raises ``RuntimeError`` naming the file when ``home`` has no
        login file or ``dags_folder`` no pipelines file."""
        login = home / "login.json"
        if not login.is_file():
            raise RuntimeError(
                f"--airflow-home {home}: no {login.name} (the admin's login, as eo-stack writes it)"
            )
        served = cls(json.loads(login.read_text())["url"], login, dags_folder, home / "logs")
        if not served.pipelines_file.is_file():
            raise RuntimeError(f"--dags-folder {dags_folder}: no pipelines.yaml")
        return served
