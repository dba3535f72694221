"""Airflow connections (``AIRFLOW_CONN_*`` values) pointing at the local stack."""

from __future__ import annotations

import json

from eo_devtools.stack.ports import LOOPBACK

HBASE_CONNECT_TIMEOUT_MS = 30000


def kafka_connection(bootstrap_servers: str) -> str:
    """Airflow JSON connection for Kafka: librdkafka settings in ``extra`` (official provider shape)."""
    return json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap_servers}})


def hbase_connection(host: str, port: int) -> str:
    """Airflow JSON connection for the HBase Thrift1 server (happybase settings in ``extra``)."""
    extra = {"transport": "buffered", "protocol": "binary", "table_prefix": None, "timeout_ms": 30000}
    return json.dumps({"conn_type": "hbase", "host": host, "port": port, "extra": extra})


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


def stack_conn_env(
    ledger_dsn: str, kafka_port: int, hbase_port: int, spark_master_url: str | None = None
) -> dict[str, str]:
    """``AIRFLOW_CONN_*`` variables for the stack; the ledger value contains the password.

    ``spark_master_url``: the running standalone cluster's, adding ``spark_standalone``.
    """
    env = {
        "AIRFLOW_CONN_EO_LEDGER": ledger_dsn,
        "AIRFLOW_CONN_EO_KAFKA": kafka_connection(f"{LOOPBACK}:{kafka_port}"),
        "AIRFLOW_CONN_EO_HBASE": hbase_connection(LOOPBACK, hbase_port),
        "AIRFLOW_CONN_SPARK_DEFAULT": spark_connection(),
    }
    if spark_master_url:
        env["AIRFLOW_CONN_SPARK_STANDALONE"] = spark_standalone_connection(spark_master_url)
    return env
