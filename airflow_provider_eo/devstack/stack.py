"""LocalStack: PostgreSQL, the Tansu broker and the HBase gateway under one state directory.

Layout of the state dir: ``stack.json`` (ports), ``pids/<service>.pid``,
``logs/<service>.log``, ``secrets/`` (mode 700), ``postgres/``, ``hbase/``.
``up`` is idempotent: running healthy services are left alone (same pids, same ports).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow_provider_eo.devstack.broker import BrokerService
from airflow_provider_eo.devstack.connections import stack_conn_env
from airflow_provider_eo.devstack.hbase_gateway import HBaseGatewayService, gateway_available
from airflow_provider_eo.devstack.ports import LOOPBACK, ensure_port_free, find_free_port
from airflow_provider_eo.devstack.postgres import PostgresService
from airflow_provider_eo.devstack.process import (
    is_running,
    read_pid,
    start_process,
    stop_process_group,
    wait_until_healthy,
)
from airflow_provider_eo.devstack.service import Service

SERVICES: tuple[str, ...] = ("postgres", "broker", "hbase")
PORT_ENV_VARS: Mapping[str, str] = {
    "postgres": "EO_STACK_POSTGRES_PORT",
    "broker": "EO_STACK_KAFKA_PORT",
    "hbase": "EO_STACK_HBASE_PORT",
}
_SERVICE_CLASSES: Mapping[str, type[Service]] = {
    "postgres": PostgresService,
    "broker": BrokerService,
    "hbase": HBaseGatewayService,
}


def hbase_enabled() -> bool:
    """The gateway runs when its module exists, unless ``EO_STACK_SKIP_HBASE=1``."""
    return os.environ.get("EO_STACK_SKIP_HBASE") != "1" and gateway_available()


class LocalStack:
    """The local stack rooted at ``state_dir``; ``ports`` overrides (service -> port) apply on start."""

    def __init__(self, state_dir: str | Path, ports: Mapping[str, int] | None = None) -> None:
        self.state_dir = Path(state_dir).resolve()
        self._requested_ports = dict(ports or {})

    # -- state ---------------------------------------------------------------
    @property
    def _state_file(self) -> Path:
        return self.state_dir / "stack.json"

    def _recorded_ports(self) -> dict[str, int]:
        try:
            data: dict[str, Any] = json.loads(self._state_file.read_text())
        except FileNotFoundError:
            return {}
        return {name: int(port) for name, port in data.get("ports", {}).items()}

    def _service(self, name: str, port: int) -> Service:
        return _SERVICE_CLASSES[name](self.state_dir, port)

    def _pid(self, name: str) -> int | None:
        pid = read_pid(self.state_dir / "pids" / f"{name}.pid")
        return pid if pid is not None and is_running(pid) else None

    def _choose_port(self, name: str, recorded: Mapping[str, int]) -> int:
        if self._pid(name) is not None and name in recorded:
            return recorded[name]
        if name in self._requested_ports:
            return self._requested_ports[name]
        if os.environ.get(PORT_ENV_VARS[name]):
            return int(os.environ[PORT_ENV_VARS[name]])
        return recorded.get(name) or find_free_port()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.state_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    # -- lifecycle -----------------------------------------------------------
    def up(self) -> dict[str, dict[str, Any]]:
        """Start every missing service and wait until all answer; return :meth:`status`."""
        with self._locked():
            self.state_dir.chmod(0o755)  # PostgreSQL's OS user must be able to enter it
            (self.state_dir / "pids").mkdir(exist_ok=True)
            recorded = self._recorded_ports()
            ports = {name: self._choose_port(name, recorded) for name in SERVICES}
            self._state_file.write_text(json.dumps({"ports": ports}, indent=2) + "\n")
            services = [self._service(n, ports[n]) for n in SERVICES if n != "hbase" or hbase_enabled()]
            for service in services:  # fail before starting anything when a port is taken
                if self._pid(service.name) is None:
                    ensure_port_free(service.port, service.name)
            for service in services:
                self._ensure_running(service)
        return self.status()

    def _ensure_running(self, service: Service) -> None:
        pid = self._pid(service.name)
        if pid is None:
            ensure_port_free(service.port, service.name)
            service.prepare()
            pid = start_process(
                service.argv(),
                log_path=service.log_path,
                pid_path=service.pid_path,
                env=service.environment(),
                cwd=service.cwd(),
                user=service.run_as(),
            )
        wait_until_healthy(
            service.name, pid, service.healthy, log_path=service.log_path, timeout_s=service.startup_timeout_s
        )
        service.after_start()

    def down(self) -> None:
        """Stop every service of this stack; returns when none of their processes is left."""
        with self._locked():
            recorded = self._recorded_ports()
            for name in reversed(SERVICES):
                pid = read_pid(self.state_dir / "pids" / f"{name}.pid")
                if pid is None:
                    continue
                if is_running(pid):
                    service = self._service(name, recorded.get(name, 0))
                    stop_process_group(pid, first_signal=service.stop_signal)
                (self.state_dir / "pids" / f"{name}.pid").unlink(missing_ok=True)

    def status(self) -> dict[str, dict[str, Any]]:
        """service -> {"pid", "port", "healthy", "state"}; state is running|stopped|unavailable."""
        recorded = self._recorded_ports()
        result: dict[str, dict[str, Any]] = {}
        for name in SERVICES:
            port = recorded.get(name)
            pid = self._pid(name)
            healthy = pid is not None and port is not None and self._service(name, port).healthy()
            if pid is not None:
                state = "running"
            elif name == "hbase" and not hbase_enabled():
                state = "unavailable"
            else:
                state = "stopped"
            result[name] = {"pid": pid, "port": port, "healthy": healthy, "state": state}
        return result

    def is_up(self) -> bool:
        """True when every enabled service is running and healthy."""
        return all(s["healthy"] or s["state"] == "unavailable" for s in self.status().values())

    # -- connection info -----------------------------------------------------
    def _port(self, name: str) -> int:
        recorded = self._recorded_ports()
        if name not in recorded:
            raise RuntimeError(f"local stack in {self.state_dir} has never been started (no stack.json)")
        return recorded[name]

    @property
    def ledger_dsn(self) -> str:
        """DSN of database ``eo`` (contains the password: never log it)."""
        service = self._service("postgres", self._port("postgres"))
        assert isinstance(service, PostgresService)
        return service.dsn()

    @property
    def kafka_bootstrap(self) -> str:
        return f"{LOOPBACK}:{self._port('broker')}"

    @property
    def hbase_host(self) -> str:
        return LOOPBACK

    @property
    def hbase_port(self) -> int:
        return self._port("hbase")

    def conn_env(self) -> dict[str, str]:
        """``AIRFLOW_CONN_*`` name -> value for this stack."""
        return stack_conn_env(self.ledger_dsn, self._port("broker"), self.hbase_port)
