"""The stack's CeleryExecutor as parts of the local stack: its broker and its workers.

:class:`CeleryParts` starts Redis (:mod:`.redis_broker`) before Airflow and stops it after,
records its port in ``stack.json`` (``redis``; forgotten once stopped, like the Spark
cluster's), and turns an Airflow configuration into a CeleryExecutor one with its workers
(:mod:`.celery_worker`). Which executor runs is :class:`.airflow_executor.AirflowExecutor`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from eo_devtools.stack.airflow import LocalAirflow
from eo_devtools.stack.airflow_config import AirflowConfig
from eo_devtools.stack.airflow_executor import AirflowExecutor, celery_settings
from eo_devtools.stack.celery_worker import CeleryWorkerService
from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.process import running_pid
from eo_devtools.stack.redis_broker import REDIS_PORT_KEY, RedisService, public_url
from eo_devtools.stack.service_process import start_service, status_entry, stop_service

WritePorts = Callable[[Mapping[str, int]], None]


class CeleryParts:
    """The broker and workers of the stack in ``state_dir`` (pids in ``pids/``, logs in ``logs/``)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def broker(self, ports: Mapping[str, int]) -> RedisService:
        return RedisService(self.state_dir, ports)

    def broker_running(self) -> bool:
        return running_pid(self.state_dir / "pids" / f"{RedisService.name}.pid") is not None

    def preflight(self) -> None:
        """``redis-server`` must be installed (:class:`MissingBinaryError` naming the package)."""
        self.broker({}).preflight()

    def start_broker(self, recorded: Mapping[str, int], write_ports: WritePorts) -> None:
        """Run Redis on its recorded port (a free one the first time; a running Redis is left
        alone) and record the port through ``write_ports``; forgotten again when it fails."""
        port = recorded.get(REDIS_PORT_KEY)
        taken = {p for key, p in recorded.items() if key != REDIS_PORT_KEY}
        if port is None or (not self.broker_running() and port in taken):
            port = find_free_port()
        ports = {**recorded, REDIS_PORT_KEY: port}
        write_ports(ports)
        if self.broker_running():
            return
        try:
            start_service(self.broker(ports))
        except BaseException:
            write_ports({key: p for key, p in ports.items() if key != REDIS_PORT_KEY})
            raise

    def stop_broker(self, recorded: Mapping[str, int], write_ports: WritePorts) -> None:
        """Stop Redis (if ``recorded`` names it) and forget its port."""
        if REDIS_PORT_KEY in recorded:
            stop_service(self.broker(recorded))
            write_ports({key: p for key, p in recorded.items() if key != REDIS_PORT_KEY})

    def broker_status(self, recorded: Mapping[str, int]) -> dict[str, dict[str, Any]]:
        """``{"redis": entry}`` shaped like the other services' (``url`` without the password);
        {} when no broker is recorded."""
        if REDIS_PORT_KEY not in recorded:
            return {}
        broker = self.broker(recorded)
        pid = running_pid(broker.pid_path)
        entry = status_entry(broker, pid, healthy=pid is not None and broker.healthy())
        entry["url"] = public_url(recorded[REDIS_PORT_KEY])
        return {broker.name: entry}

    def airflow(
        self, config: AirflowConfig, executor: AirflowExecutor, ports: Mapping[str, int]
    ) -> LocalAirflow:
        """``config``'s Airflow under ``executor``: with Celery (and a recorded broker) its
        settings under ``config.settings`` (which win: the tests' shorter timeouts) and its
        workers beside the four services."""
        if not executor.is_celery or REDIS_PORT_KEY not in ports:
            return LocalAirflow(config)
        broker = self.broker(ports).url
        config = replace(config, settings={**celery_settings(config, broker), **config.settings})
        count = executor.celery_workers
        workers = [CeleryWorkerService(config, n, executor.concurrency) for n in range(1, count + 1)]
        return LocalAirflow(config, workers)
