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


def stack_conn_env(ledger_dsn: str, kafka_port: int, hbase_port: int) -> dict[str, str]:
    """``AIRFLOW_CONN_*`` variables for the stack; the ledger value contains the password."""
    return {
        "AIRFLOW_CONN_EO_LEDGER": ledger_dsn,
        "AIRFLOW_CONN_EO_KAFKA": kafka_connection(f"{LOOPBACK}:{kafka_port}"),
        "AIRFLOW_CONN_EO_HBASE": hbase_connection(LOOPBACK, hbase_port),
        "AIRFLOW_CONN_SPARK_DEFAULT": spark_connection(),
    }
