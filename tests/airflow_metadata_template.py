"""Migrated Airflow metadata databases for the tests, copied instead of migrated again.

``airflow db migrate`` of an empty database costs 10-20 s of a 2-core machine, and a
test session creates several metadata databases on one PostgreSQL server (the session's
``airflow_server``, the Airflow of tests/integration/test_airflow_leftovers.py, the fault
suite's :class:`~tests.faults.airflow_services.PostgresAirflow` and Celery Airflow) and
several SQLite homes (``airflow dags test``). The first one on a server is migrated into
a template database (``airflow_template_<hex>``, owned by the server's superuser); each
one after it is ``CREATE DATABASE ... TEMPLATE`` of it (about a second). A SQLite home
gets a copy of a migrated ``airflow.db``. What a test then runs finds exactly what
``airflow db migrate`` would have left: the same schema, alembic version and default pool.

Templates are dropped when the process exits (best effort: the stack may be gone).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from importlib.metadata import version
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg2
from psycopg2 import sql

from eo_devtools.stack.airflow_config import AirflowConfig

_lock = threading.Lock()
_templates: dict[tuple[str | None, int | None], str] = {}
_sqlite_db: list[Path] = []


def _url(dsn: str, database: str, scheme: str | None = None) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{database}", scheme=scheme or parts.scheme))


def _execute(dsn: str, database: str, *statements: sql.Composable | str) -> None:
    """Run ``statements`` in ``database`` of ``dsn``'s server, outside a transaction."""
    conn = psycopg2.connect(_url(dsn, database), connect_timeout=5)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def _migrate(home: Path, sql_alchemy_conn: str | None) -> None:
    """``airflow db migrate`` in ``home`` (SQLite ``home/airflow.db`` when no conn given);
    raises RuntimeError with the output's tail when it fails."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")},
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    }
    if sql_alchemy_conn is not None:
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = sql_alchemy_conn
        # the async engine is never used by a migration; asyncpg need not be installed
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC"] = f"sqlite+aiosqlite:///{home}/async-unused.db"
    result = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed (exit {result.returncode}):\n{result.stdout[-3000:]}")


def _template(server_dsn: str) -> str:
    """The migrated template database on ``server_dsn``'s server (created on first use)."""
    parts = urlsplit(server_dsn)
    key = (parts.hostname, parts.port)
    with _lock:
        if key in _templates and not _exists(server_dsn, _templates[key]):
            del _templates[key]  # another server on that port since (a stack stopped, a new one)
        if key not in _templates:
            name = f"airflow_template_{uuid.uuid4().hex[:8]}"
            _execute(server_dsn, "postgres", sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            home = Path(tempfile.mkdtemp(prefix="eo-airflow-template-"))
            try:
                _migrate(home, _url(server_dsn, name, "postgresql+psycopg2"))
            finally:
                shutil.rmtree(home, ignore_errors=True)
            _templates[key] = name
            atexit.register(_drop_quietly, server_dsn, name)
        return _templates[key]


def _exists(server_dsn: str, database: str) -> bool:
    conn = psycopg2.connect(_url(server_dsn, "postgres"), connect_timeout=5)
    try:
        with conn, conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
            return cur.fetchone() is not None
    finally:
        conn.close()


def _drop_quietly(server_dsn: str, database: str) -> None:
    with contextlib.suppress(Exception):  # the stack may be gone already: nothing to drop
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
        _execute(server_dsn, "postgres", drop)


def create_migrated_database(server_dsn: str, database: str, owner: str | None = None) -> None:
    """Create ``database`` on ``server_dsn``'s server (a superuser's DSN) as a copy of the
    migrated template; with ``owner`` (an existing role) it owns the database and may use
    every table and sequence in it (the tables stay the superuser's)."""
    name = sql.Identifier(database)
    create = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(name, sql.Identifier(_template(server_dsn)))
    if owner is None:
        _execute(server_dsn, "postgres", create)
        return
    role = sql.Identifier(owner)
    _execute(server_dsn, "postgres", create + sql.SQL(" OWNER {}").format(role))
    _execute(
        server_dsn,
        database,
        sql.SQL("GRANT ALL ON SCHEMA public TO {}").format(role),
        sql.SQL("GRANT ALL ON ALL TABLES IN SCHEMA public TO {}").format(role),
        sql.SQL("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {}").format(role),
    )


def prepare_local_airflow_database(config: AirflowConfig) -> None:
    """Give a :class:`~eo_devtools.stack.airflow.LocalAirflow` of ``config`` its role and a
    migrated copy as its database, and its migration stamp (``.db-migrated``, what
    ``eo_devtools.stack.airflow_metadata.migrate`` writes), so its ``up`` migrates nothing
    (it still sets the role's password)."""
    role = sql.Identifier(config.database)
    _execute(config.postgres_dsn, "postgres", sql.SQL("CREATE ROLE {} LOGIN").format(role))
    create_migrated_database(config.postgres_dsn, config.database, owner=config.database)
    config.home.mkdir(parents=True, exist_ok=True)
    (config.home / ".db-migrated").write_text(f"{config.database} {version('apache-airflow')}\n")


def migrated_sqlite_home(home: Path) -> None:
    """Put a migrated ``airflow.db`` (a copy of the session's first one) into ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    with _lock:
        if not _sqlite_db:
            source = Path(tempfile.mkdtemp(prefix="eo-airflow-sqlite-template-"))
            _migrate(source, None)
            _sqlite_db.append(source / "airflow.db")
            atexit.register(shutil.rmtree, source, True)
        shutil.copyfile(_sqlite_db[0], home / "airflow.db")
