"""Airflow connections (``AIRFLOW_CONN_*`` values) pointing at the local stack."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, urlsplit

from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.schema_registry import CCOMPAT_PATH

HBASE_CONNECT_TIMEOUT_MS = 30000


def kafka_connection(bootstrap_servers: str) -> str:
    """Airflow JSON connection for Kafka: librdkafka settings in ``extra`` (official provider shape)."""
    return json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap_servers}})


def hbase_connection(host: str, port: int, more_ports: Sequence[int] = ()) -> str:
    """Airflow JSON connection for the HBase Thrift1 server(s) (happybase settings in ``extra``).

    ``more_ports``: the further Thrift servers on ``host``; with any, ``extra.servers`` lists
    every server, ``host:port`` first (``clients.connection_settings.hbase_endpoints``).
    """
    extra: dict[str, object] = {
        "transport": "buffered", "protocol": "binary", "table_prefix": None, "timeout_ms": 30000
    }  # fmt: skip
    if more_ports:
        extra["servers"] = ",".join(f"{host}:{p}" for p in (port, *more_ports))
    return json.dumps({"conn_type": "hbase", "host": host, "port": port, "extra": extra})


def schema_registry_connection(host: str, port: int) -> str:
    """Airflow JSON connection for the Schema Registry, HTTP-connection style.

    ``schema`` is the URL scheme (as Airflow's HTTP connections use it) and ``extra.path`` the
    Confluent-compatible API's base path: ``http://<host>:<port>/apis/ccompat/v7``. No auth
    on the local stack (login/password would be basic auth).
    """
    return json.dumps(
        {"conn_type": "http", "host": host, "port": port, "schema": "http", "extra": {"path": CCOMPAT_PATH}}
    )


def spark_connection() -> str:
    """Spark in local mode.

    SparkSubmitHook (apache-spark provider 6.3) turns conn_type ``spark`` with host
    ``local[*]`` and no port into ``--master local[*]``; the binary is ``spark-submit`` on PATH.
    """
    return json.dumps({"conn_type": "spark", "host": "local[*]"})


def spark_standalone_connection(master_url: str) -> str:
    """The stack's Spark standalone cluster, client deploy mode.

    SparkSubmitHook turns conn_type ``spark`` with a host holding ``://`` and no port into
    ``--master <host>``, here ``spark://127.0.0.1:<port>``.
    """
    return json.dumps({"conn_type": "spark", "host": master_url, "extra": {"deploy-mode": "client"}})


def spark_yarn_connection(webapp_url: str, queue: str = "default") -> str:
    """The stack's YARN, cluster deploy mode (``spark_yarn``).

    SparkSubmitHook turns host ``yarn`` into ``--master yarn`` and takes ``deploy-mode`` and
    ``queue`` from ``extra``; ``yarn_resourcemanager_webapp_address`` is the Spark provider's
    own key for the RM's web address (it asks the RM about the application there). spark-submit
    finds the RM through ``HADOOP_CONF_DIR`` (``eo-stack env`` prints it).
    """
    extra = {"deploy-mode": "cluster", "queue": queue, "yarn_resourcemanager_webapp_address": webapp_url}
    return json.dumps({"conn_type": "spark", "host": "yarn", "extra": extra})


def airflow_api_connection(url: str, username: str, password: str) -> str:
    """Airflow URI connection for the stack's REST API (``airflow_api``, read by
    ``clients/airflow_rest.py``): ``http://<user>:<password>@<host>:<port>`` with both quoted.
    Contains the password: print it only where ``eo-stack env`` prints secrets."""
    server = urlsplit(url)
    login = f"{quote(username, safe='')}:{quote(password, safe='')}"
    return f"{server.scheme}://{login}@{server.hostname}:{server.port}"


def stack_conn_env(
    ledger_dsn: str,
    kafka_bootstrap: str,
    hbase_port: int | Sequence[int],
    spark_master_url: str | None = None,
    *,
    schema_registry_port: int | None = None,
    yarn_webapp_url: str | None = None,
) -> dict[str, str]:
    """``AIRFLOW_CONN_*`` variables for the stack; the ledger value contains the password.

    ``hbase_port``: the Thrift server's port, or every Thrift server's (the first first:
    ``eo_hbase`` then lists them all in ``extra.servers``).
    ``spark_master_url``: the running standalone cluster's, adding ``spark_standalone``.
    ``schema_registry_port``: the stack's Schema Registry's, adding ``schema_registry``.
    ``yarn_webapp_url``: the running YARN ResourceManager's web address, adding ``spark_yarn``.
    """
    thrift_ports = [hbase_port] if isinstance(hbase_port, int) else list(hbase_port)
    env = {
        "AIRFLOW_CONN_EO_LEDGER": ledger_dsn,
        "AIRFLOW_CONN_EO_KAFKA": kafka_connection(kafka_bootstrap),
        "AIRFLOW_CONN_EO_HBASE": hbase_connection(LOOPBACK, thrift_ports[0], thrift_ports[1:]),
        "AIRFLOW_CONN_SPARK_DEFAULT": spark_connection(),
    }
    if schema_registry_port is not None:
        env["AIRFLOW_CONN_SCHEMA_REGISTRY"] = schema_registry_connection(LOOPBACK, schema_registry_port)
    if spark_master_url:
        env["AIRFLOW_CONN_SPARK_STANDALONE"] = spark_standalone_connection(spark_master_url)
    if yarn_webapp_url:
        env["AIRFLOW_CONN_SPARK_YARN"] = spark_yarn_connection(yarn_webapp_url)
    return env


def ledger_tls_connection(port: int, role: str, database: str, ca: Path, cert: Path, key: Path) -> str:
    """The ledger over TLS (JSON): ``sslmode=verify-full`` against ``ca``, authenticated by the
    client certificate ``cert``/``key`` (PostgreSQL's ``cert`` auth: no password)."""
    extra = {"sslmode": "verify-full", "sslrootcert": str(ca), "sslcert": str(cert), "sslkey": str(key)}
    return json.dumps(
        {
            "conn_type": "postgres",
            "host": LOOPBACK,
            "port": port,
            "login": role,
            "schema": database,
            "extra": extra,
        }
    )
