"""The project's local HBase Thrift1 gateway (``python -m airflow_provider_eo.devstack.hbase``)."""

from __future__ import annotations

import importlib.util
import sys

import happybase

from airflow_provider_eo.devstack.ports import LOOPBACK, accepts_connections
from airflow_provider_eo.devstack.service import Service

GATEWAY_MODULE = "airflow_provider_eo.devstack.hbase"


def gateway_available() -> bool:
    """True when the gateway package can be run with ``python -m`` (it has a ``__main__``)."""
    try:
        return importlib.util.find_spec(f"{GATEWAY_MODULE}.__main__") is not None
    except ImportError:
        return False


class HBaseGatewayService(Service):
    """Gateway on 127.0.0.1:``port`` (buffered transport, binary protocol), data under the state dir."""

    name = "hbase"
    startup_timeout_s = 60.0

    def argv(self) -> list[str]:
        data_dir = self.state_dir / "hbase" / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        return [
            sys.executable,
            "-m",
            GATEWAY_MODULE,
            "serve",
            "--host",
            LOOPBACK,
            "--port",
            str(self.port),
            "--data-dir",
            str(data_dir),
        ]

    def healthy(self) -> bool:
        if not accepts_connections(self.port):
            return False
        try:
            connection = happybase.Connection(LOOPBACK, self.port, timeout=3000)
            try:
                connection.tables()
            finally:
                connection.close()
        except Exception:
            return False
        return True
