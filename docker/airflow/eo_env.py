"""Entrypoint of the ``eo-airflow`` image: secrets in, encoded settings out, then ``exec``.

``python eo_env.py COMMAND [ARGS...]`` reads raw secrets from its environment, derives
the settings that embed them, removes the raw values and replaces itself with
``COMMAND`` (the image runs ``/entrypoint``, Airflow's own; healthchecks run ``airflow
...`` through it too, so they see the same settings).

A password can hold any character, and ``@ : / % # ?`` break a URI that embeds it as it
is, so nothing here pastes a password into a string:

* ``AIRFLOW_DB_PASSWORD`` -> ``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN`` and
  ``AIRFLOW__CELERY__RESULT_BACKEND``: SQLAlchemy URLs whose user and password are
  percent-encoded (``urllib.parse.quote`` with no safe characters).
* ``EO_LEDGER_PASSWORD`` -> ``AIRFLOW_CONN_EO_LEDGER`` in Airflow's JSON connection
  form (``json.dumps`` escapes), which the provider's hooks read.
* ``AIRFLOW_ADMIN_PASSWORD`` (given to the api-server only) -> the simple auth
  manager's passwords file ``{"<AIRFLOW_ADMIN_USERNAME>": "<password>"}``, mode 0600,
  at ``AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE``; the manager reads it and
  generates no password of its own.

A derived variable the environment already sets is left alone (an explicit setting
wins). Host, port, users and database names are the compose file's
(``EO_POSTGRES_HOST``/``EO_POSTGRES_PORT`` override the server). Nothing is printed:
every value handled here is a secret.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from urllib.parse import quote

#: Raw secrets this script consumes; none of them reaches the command's environment.
RAW_SECRETS = ("AIRFLOW_DB_PASSWORD", "EO_LEDGER_PASSWORD", "AIRFLOW_ADMIN_PASSWORD")
AIRFLOW_DB = ("airflow", "airflow")  # (user, database), created by the postgres image
LEDGER_DB = ("eo", "eo")  # (user, database), created by postgres-init/10-eo-ledger.sh
PASSWORDS_FILE_VAR = "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"


def database_url(scheme: str, user: str, password: str, host: str, port: int, database: str) -> str:
    """``scheme://user:password@host:port/database`` with user and password percent-encoded."""
    credentials = f"{quote(user, safe='')}:{quote(password, safe='')}"
    return f"{scheme}://{credentials}@{host}:{port}/{quote(database, safe='')}"


def postgres_connection(user: str, password: str, host: str, port: int, database: str) -> str:
    """Airflow's JSON form of a PostgreSQL connection (no encoding rules beyond JSON's)."""
    fields = {"conn_type": "postgres", "host": host, "port": port, "login": user, "password": password}
    return json.dumps({**fields, "schema": database})


def derived_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables derived from the raw secrets present in ``environ`` (see the module doc)."""
    host = environ.get("EO_POSTGRES_HOST", "postgres")
    port = int(environ.get("EO_POSTGRES_PORT", "5432"))
    settings: dict[str, str] = {}
    if db_password := environ.get("AIRFLOW_DB_PASSWORD"):
        user, database = AIRFLOW_DB
        url = database_url("postgresql+psycopg2", user, db_password, host, port, database)
        settings["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = url
        # The driver named: SQLAlchemy 2.1's default for "postgresql" is psycopg 3, not installed.
        settings["AIRFLOW__CELERY__RESULT_BACKEND"] = "db+" + database_url(
            "postgresql+psycopg2", user, db_password, host, port, database
        )
    if ledger_password := environ.get("EO_LEDGER_PASSWORD"):
        user, database = LEDGER_DB
        settings["AIRFLOW_CONN_EO_LEDGER"] = postgres_connection(user, ledger_password, host, port, database)
    return {name: value for name, value in settings.items() if not environ.get(name)}


def write_passwords_file(environ: Mapping[str, str]) -> str | None:
    """Write the simple auth manager's passwords file (atomically, 0600); its path, or None.

    Does nothing unless both ``AIRFLOW_ADMIN_PASSWORD`` and the file variable are set.
    """
    password = environ.get("AIRFLOW_ADMIN_PASSWORD")
    path = environ.get(PASSWORDS_FILE_VAR)
    if not password or not path:
        return None
    username = environ.get("AIRFLOW_ADMIN_USERNAME") or "admin"
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".passwords-")  # created 0600
    with os.fdopen(fd, "w") as file:
        json.dump({username: password}, file)
    os.replace(tmp, path)
    return path


def command_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` plus the derived settings, minus the raw secrets."""
    env = {**environ, **derived_settings(environ)}
    for name in RAW_SECRETS:
        env.pop(name, None)
    return env


def main(argv: list[str]) -> None:
    """Write the passwords file, then replace this process with ``argv`` (never returns)."""
    if not argv:
        sys.exit("usage: eo_env.py COMMAND [ARGS...]")
    write_passwords_file(os.environ)
    os.execvpe(argv[0], argv, command_environment(os.environ))


if __name__ == "__main__":
    main(sys.argv[1:])
