"""Configuration of a local Airflow: its secrets, its login and the environment of its processes.

Secrets (JWT secret, API secret key, Fernet key, metadata DB password, the admin's
password) are generated once into ``<home>/secrets.json`` (mode 600) and reach Airflow
only through environment variables, never a command line or a log. The admin's login
is written to ``<home>/login.json`` (mode 600: ``url``, ``username``, ``password``);
the Simple auth manager reads the same password from ``<home>/passwords.json`` (mode
600, written before the API server starts, so Airflow never generates or prints one).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

from cryptography.fernet import Fernet

from eo_devtools.stack.ports import LOOPBACK

ADMIN_USER = "admin"
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
FAST_SETTINGS: Mapping[str, str] = {
    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "5",
    "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
    "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2",
    "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "2",
    "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
}
"""Short intervals for tests: new pipelines appear within seconds, dead tasks are noticed soon."""

RECOVERY_SETTINGS: Mapping[str, str] = {
    # a task whose supervisor stopped heartbeating (killed, its host gone) is failed, and
    # retried, after 60 s instead of 300 s; the supervisor beats every 5 s (12 missed beats)
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
    "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "5",
    # after a scheduler died, its successor resets the tasks it queued or ran once the dead
    # one's heartbeat is 30 s old, looking every 30 s instead of every 300 s
    "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "30",
    "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "30",
}
"""What a deployment of this provider should set so a killed task or scheduler costs about a
minute, not five (every Airflow process gets them; docs/scale.md, "Airflow settings that
recover fast", measures both). ``settings`` override them (:data:`FAST_SETTINGS` for tests)."""

LOW_LATENCY_SETTINGS: Mapping[str, str] = {
    # an idle scheduler loop sleeps this long (default 1 s) before it looks again: the wait
    # between a task's success and its downstream task being queued
    "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.1",
}
"""Scheduler settings that shorten the gaps between a run's tasks (measured by
benchmarks/epoch_overhead.py; docs/performance.md)."""


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 600 (atomically: a temp file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(text)
    tmp.replace(path)


def _generate_secrets() -> dict[str, str]:
    return {
        "jwt_secret": secrets.token_urlsafe(32),
        "api_secret_key": secrets.token_urlsafe(32),
        "fernet_key": Fernet.generate_key().decode(),
        "db_password": secrets.token_urlsafe(24),
        "admin_password": secrets.token_urlsafe(12),
    }


@dataclass(frozen=True)
class AirflowConfig:
    """One local Airflow: where it lives, what it serves and what it connects to.

    ``state_dir`` holds the services' ``logs/`` and ``pids/``; ``home`` is AIRFLOW_HOME;
    ``database`` names both the metadata database and its owner role on the PostgreSQL
    that ``postgres_dsn`` (a superuser DSN: secret) reaches; ``conn_env`` are the
    ``AIRFLOW_CONN_*`` variables every process gets; ``settings`` extra variables, over
    :data:`RECOVERY_SETTINGS`, which every process gets: ``AIRFLOW__*`` ones (e.g.
    :data:`FAST_SETTINGS`) or what the tasks' spark-submit needs (``HADOOP_CONF_DIR``).
    """

    state_dir: Path
    home: Path
    port: int
    database: str
    postgres_dsn: str
    conn_env: Mapping[str, str]
    dags_folder: Path
    pipelines_file: Path | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    parallelism: int = 4

    @property
    def url(self) -> str:
        """Base URL of the API server (UI, REST API v2, the Epochs page at ``/eo``)."""
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def secrets_path(self) -> Path:
        return self.home / "secrets.json"

    @property
    def login_path(self) -> Path:
        """The admin's login (mode 600): ``{"url", "username", "password"}``."""
        return self.home / "login.json"

    @property
    def passwords_path(self) -> Path:
        return self.home / "passwords.json"

    def secrets(self) -> dict[str, str]:
        """The secrets, generated on first use (file mode 600)."""
        if not self.secrets_path.exists():
            write_private(self.secrets_path, json.dumps(_generate_secrets(), indent=2) + "\n")
        loaded: dict[str, str] = json.loads(self.secrets_path.read_text())
        return loaded

    def write_login(self) -> None:
        """Write the login file and the Simple auth manager's password file (both mode 600)."""
        password = self.secrets()["admin_password"]
        write_private(self.passwords_path, json.dumps({ADMIN_USER: password}) + "\n")
        login = {"url": self.url, "username": ADMIN_USER, "password": password}
        write_private(self.login_path, json.dumps(login, indent=2) + "\n")

    def metadata_url(self, scheme: str = "postgresql+psycopg2") -> str:
        """SQLAlchemy URL of the metadata database (contains the password: never log it)."""
        server = urlsplit(self.postgres_dsn)
        password = quote(self.secrets()["db_password"], safe="")
        return f"{scheme}://{self.database}:{password}@{server.hostname}:{server.port}/{self.database}"

    def environment(self) -> dict[str, str]:
        """The environment of every Airflow process (secrets included: never print it)."""
        secret = self.secrets()
        bin_dir = str(Path(sys.executable).parent)  # the venv's spark-submit for the tasks
        env = {
            **RECOVERY_SETTINGS,  # unless this process's environment sets them
            **os.environ,
            **self.conn_env,
            "PATH": os.pathsep.join(p for p in (bin_dir, os.environ.get("PATH", "")) if p),
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(self.parallelism),
            "AIRFLOW__CORE__FERNET_KEY": secret["fernet_key"],
            "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.passwords_path),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API__HOST": LOOPBACK,
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__SECRET_KEY": secret["api_secret_key"],
            "AIRFLOW__API_AUTH__JWT_SECRET": secret["jwt_secret"],
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.metadata_url(),
            # the async engine (run waits, the task state store) on the same database
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": self.metadata_url("postgresql+asyncpg"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE": "3",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs"),
        }
        env.pop("EO_PIPELINES_FILE", None)  # the DAG folder's pipelines.yaml, unless given
        if self.pipelines_file is not None:
            env["EO_PIPELINES_FILE"] = str(self.pipelines_file)
        env.update(self.settings)
        return env
