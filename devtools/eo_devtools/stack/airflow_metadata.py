"""The metadata database of a local Airflow on the stack's PostgreSQL: create, migrate, drop.

The database and its owner role share one name (:attr:`AirflowConfig.database`); the
role's password is the ``db_password`` secret, set through a parameter of one SQL
statement (never a command line). ``airflow db migrate`` runs once per Airflow
version: a stamp file in AIRFLOW_HOME records the version it migrated to.
"""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import urlsplit, urlunsplit

import psycopg2
from psycopg2 import sql

from eo_devtools.stack.airflow_config import AirflowConfig
from eo_devtools.stack.process import ServiceStartError, log_tail

MIGRATE_TIMEOUT_S = 600


def _server_connection(config: AirflowConfig) -> psycopg2.extensions.connection:
    """A superuser connection to database ``postgres`` of the stack's server (autocommit)."""
    parts = urlsplit(config.postgres_dsn)
    conn = psycopg2.connect(urlunsplit(parts._replace(path="/postgres")), connect_timeout=5)
    conn.autocommit = True
    return conn


def ensure_database(config: AirflowConfig) -> None:
    """Create the role (login, the secret password) and the database it owns, when missing."""
    name = sql.Identifier(config.database)
    conn = _server_connection(config)
    try:
        with conn.cursor() as cur:
            cur.execute("select 1 from pg_roles where rolname = %s", (config.database,))
            if cur.fetchone() is None:
                cur.execute(sql.SQL("create role {} login").format(name))
            cur.execute(sql.SQL("alter role {} password %s").format(name), (config.secrets()["db_password"],))
            cur.execute("select 1 from pg_database where datname = %s", (config.database,))
            if cur.fetchone() is None:
                cur.execute(sql.SQL("create database {} owner {}").format(name, name))
    finally:
        conn.close()


def drop_database(config: AirflowConfig) -> None:
    """Drop the database (open sessions are terminated) and its role."""
    name = sql.Identifier(config.database)
    conn = _server_connection(config)
    try:
        with conn.cursor() as cur:
            cur.execute(sql.SQL("drop database if exists {} with (force)").format(name))
            cur.execute(sql.SQL("drop role if exists {}").format(name))
    finally:
        conn.close()


def _airflow_version() -> str:
    from importlib.metadata import version

    return version("apache-airflow")


def migrate(config: AirflowConfig) -> bool:
    """``airflow db migrate`` unless this Airflow version already migrated the database.

    Returns True when it ran. Raises :class:`ServiceStartError` with the tail of
    ``<state>/logs/airflow-migrate.log`` when it fails.
    """
    stamp = config.home / ".db-migrated"
    wanted = f"{config.database} {_airflow_version()}"
    if stamp.exists() and stamp.read_text().strip() == wanted:
        return False
    log_path = config.state_dir / "logs" / "airflow-migrate.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        result = subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"],
            env=config.environment(),
            cwd=config.home,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=MIGRATE_TIMEOUT_S,
            check=False,
        )
    if result.returncode != 0:
        raise ServiceStartError(
            f"airflow db migrate failed (exit {result.returncode}); last lines of {log_path}:\n"
            f"{log_tail(log_path)}"
        )
    stamp.write_text(wanted + "\n")
    return True
