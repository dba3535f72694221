"""What the tests of the write step in YARN cluster deploy mode share.

:class:`YarnRecords` reads what the stack's YARN (the session's ``yarn`` fixture,
tests/yarn_support.py) keeps of an application. :func:`secret_connections`
gives the write step connections whose secrets match none of Spark's redaction patterns:
the ledger as a PostgreSQL role made for the test with a random password like
``Zq7hunter5f2a9c`` (a URI DSN, the form the issue found in an event log), and marker
passwords in the Kafka and HBase connections (which ignore them). :func:`places_holding`
lists where such a string appears (RM REST answers, NodeManager files, logs).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import pytest
import requests
import yaml
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.ledger import Ledger
from eo_devtools.stack.stack import LocalStack
from eo_devtools.stack.yarn_spark import yarn_spark_conf, yarn_submit_env
from tests.conftest import StackInfo
from tests.yarn_support import YarnInfo


@dataclass(frozen=True)
class YarnRecords:
    """The stack's YARN: the RM's REST base URL and the state dir its NodeManager writes in."""

    url: str
    state_dir: Path

    @classmethod
    def of(cls, yarn: YarnInfo) -> YarnRecords:
        return cls(yarn.webapp_url, yarn.state_dir)

    def apps_tagged(self, tag: str) -> list[dict[str, Any]]:
        answer = requests.get(f"{self.url}/ws/v1/cluster/apps", params={"applicationTags": tag}, timeout=30)
        return (answer.json().get("apps") or {}).get("app") or []

    def app_records(self, app_id: str) -> dict[str, str]:
        """What the RM's REST API says about ``app_id``: the application and its attempts."""
        return {
            f"RM {path}": requests.get(f"{self.url}{path}", timeout=30).text
            for path in (f"/ws/v1/cluster/apps/{app_id}", f"/ws/v1/cluster/apps/{app_id}/appattempts")
        }

    def container_logs(self, app_id: str) -> dict[Path, str]:
        """Every container log file of ``app_id`` (stdout, stderr, ... under the NM's log dir)."""
        root = self.state_dir / "yarn" / "nm-logs" / app_id
        return {p: p.read_text(errors="replace") for p in sorted(root.rglob("*")) if p.is_file()}

    def node_files(self) -> dict[Path, str]:
        """Every file the NodeManager wrote, links not followed: under its local dirs (the
        launch scripts in ``nmPrivate``, each container's directory with ``directory.info``
        and the localized ``__spark_conf__``, the private and public file caches) and its
        log dirs (containers' logs and the copies of their launch files). Kept after an
        application ends by the stack's ``yarn.nodemanager.delete.debug-delay-sec``."""
        roots = [self.state_dir / "yarn" / "nm-local", self.state_dir / "yarn" / "nm-logs"]
        return {
            p: p.read_bytes().decode("latin-1")
            for root in roots
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()  # rglob does not enter linked directories
        }


@pytest.fixture(scope="session", name="yarn_records")
def yarn_records_fixture(yarn: YarnInfo) -> YarnRecords:
    """:class:`YarnRecords` of the session's YARN (started on first use)."""
    return YarnRecords.of(yarn)


@dataclass(frozen=True)
class Secrets:
    """The secrets the connections carry (each must appear nowhere but in the driver's file)."""

    ledger_password: str
    kafka_marker: str
    hbase_marker: str

    def all(self) -> tuple[str, ...]:
        return (self.ledger_password, self.kafka_marker, self.hbase_marker)


@pytest.fixture(scope="module", name="ledger_role")
def ledger_role_fixture(stack: StackInfo) -> Iterator[tuple[str, str]]:
    """``(URI DSN, password)`` of a new login role that may do what the stack's ledger user
    does (a member of it); the ledger's schema is made first, by that user, so the role owns
    nothing and is dropped afterwards."""
    with Ledger(stack.ledger_dsn):
        pass  # migrated: the schema and tables belong to the stack's user
    owner = parse_dsn(stack.ledger_dsn)
    role, password = f"eo_yarn_{secrets.token_hex(4)}", f"Zq7hunter{secrets.token_hex(3)}"
    with psycopg2.connect(stack.ledger_dsn) as admin, admin.cursor() as cur:
        cur.execute(f"CREATE ROLE {role} LOGIN PASSWORD %s IN ROLE {owner['user']}", (password,))
    yield f"postgresql://{role}:{password}@{owner['host']}:{owner['port']}/{owner['dbname']}", password
    with psycopg2.connect(stack.ledger_dsn) as admin, admin.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
        cur.execute(f"REASSIGN OWNED BY {role} TO {owner['user']}")
        cur.execute(f"DROP OWNED BY {role}")
        cur.execute(f"DROP ROLE {role}")


def secret_connections(stack: StackInfo, ledger_uri: str, password: str) -> tuple[dict[str, str], Secrets]:
    """The stack's connections as they are now (``spark_yarn`` included once the ``yarn``
    fixture started YARN: ``stack.conn_env`` is the session start's) with the ledger as
    ``ledger_uri`` and marker passwords in the Kafka and HBase connections."""
    found = Secrets(password, f"Kf4marker{secrets.token_hex(3)}", f"Hb5marker{secrets.token_hex(3)}")
    current = LocalStack(stack.state_dir).conn_env()
    kafka = {**json.loads(current["AIRFLOW_CONN_EO_KAFKA"]), "password": found.kafka_marker}
    hbase = {**json.loads(current["AIRFLOW_CONN_EO_HBASE"]), "password": found.hbase_marker}
    env = {
        **current,
        "AIRFLOW_CONN_EO_LEDGER": ledger_uri,
        "AIRFLOW_CONN_EO_KAFKA": json.dumps(kafka),
        "AIRFLOW_CONN_EO_HBASE": json.dumps(hbase),
    }
    return env, found


def use_yarn_environment(monkeypatch: pytest.MonkeyPatch, stack: StackInfo, conn_env: dict[str, str]) -> None:
    """Connections ``conn_env``, spark-submit's Hadoop conf, and the venv's ``bin`` on ``PATH``."""
    for name, value in {**conn_env, **yarn_submit_env(stack.state_dir)}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def write_pipelines(path: Path, entry: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump({"pipelines": [entry]}))
    return str(path)


def cluster_spark(state_dir: Path, *, package: str, python: str, **conf: str) -> dict[str, Any]:
    """A pipeline's ``spark`` section for the stack's YARN in cluster deploy mode, the driver
    and executors on ``python``, the package shipped as ``package`` (zip or installed)."""
    settings = {
        **yarn_spark_conf(state_dir),
        "spark.pyspark.python": python,
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
        "spark.executorEnv.PYSPARK_PYTHON": python,
        **conf,
    }
    return {"master": "yarn", "deploy_mode": "cluster", "package": package, "conf": settings}


def places_holding(text: str, places: dict[Any, str]) -> list[str]:
    """The names of ``places`` (name -> content) whose content contains ``text``."""
    return [str(name) for name, content in places.items() if text in content]
