"""The local stack's optional Spark standalone cluster as a whole: start, resize, stop, status.

``eo-stack up --spark-workers N`` (or :meth:`LocalStack.spark_up`) runs a master and N
workers (:mod:`.spark_services`); their ports are recorded in ``stack.json`` beside the
other services' under ``spark-master``, ``spark-master-webui``, ``spark-worker-<n>`` and
``spark-worker-<n>-webui``. A stopped cluster's ports are forgotten, so ``status`` and
``conn_env`` only mention a cluster that was started and not stopped since.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.process import running_pid
from eo_devtools.stack.service_process import launch, status_entry, stop_service, wait_healthy
from eo_devtools.stack.spark_services import (
    MASTER,
    MASTER_PORT_KEYS,
    SparkService,
    SparkWorkerService,
    alive_worker_ports,
    cluster_port_keys,
    cluster_services,
    master_json,
    master_url,
    recorded_workers,
)


def is_spark_key(key: str) -> bool:
    """True for the port keys this module owns in ``stack.json``."""
    return key.startswith("spark-")


class SparkCluster:
    """The cluster of the stack in ``state_dir`` (pids in ``pids/``, logs in ``logs/``)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def _pid(self, name: str) -> int | None:
        return running_pid(self.state_dir / "pids" / f"{name}.pid")

    def start(
        self, recorded: Mapping[str, int], workers: int, write_ports: Callable[[Mapping[str, int]], None]
    ) -> None:
        """Run the master and exactly ``workers`` workers; ``recorded`` is every port of
        ``stack.json``, rewritten through ``write_ports`` with the cluster's ports (and
        without them again when the start fails). Raises like :meth:`up`."""
        core = {key: port for key, port in recorded.items() if not is_spark_key(key)}
        ports = self.choose_ports(recorded, workers)
        write_ports({**core, **ports})
        try:
            self.up(recorded, ports)
        except BaseException:
            self.down(ports)
            write_ports(core)
            raise

    def stop(self, recorded: Mapping[str, int], write_ports: Callable[[Mapping[str, int]], None]) -> None:
        """Stop the cluster ``recorded`` names, if any, and write the ports without it."""
        if MASTER in recorded:
            self.down(recorded)
            write_ports({key: port for key, port in recorded.items() if not is_spark_key(key)})

    def choose_ports(self, recorded: Mapping[str, int], workers: int) -> dict[str, int]:
        """Port keys -> ports of a cluster with ``workers`` workers.

        ``recorded``: every port of ``stack.json``; running cluster processes keep theirs,
        the others get free ports no recorded service uses.
        """
        if workers < 1:
            raise ValueError(f"a Spark cluster needs at least one worker, got {workers}")
        taken = {port for key, port in recorded.items() if not is_spark_key(key)}
        ports: dict[str, int] = {}
        for key in cluster_port_keys(workers):
            owner = MASTER if key in MASTER_PORT_KEYS else key.removesuffix("-webui")
            port = recorded.get(key) if self._pid(owner) is not None else None
            while port is None or port in taken:
                port = find_free_port()
            taken.add(port)
            ports[key] = port
        return ports

    def up(self, recorded: Mapping[str, int], ports: Mapping[str, int]) -> None:
        """Stop the workers of ``recorded`` beyond those of ``ports``, then start (or wait for)
        the master, then every worker of ``ports`` (from :meth:`choose_ports`) until healthy.

        The workers start together once the master answers (a worker started before its
        master waits seconds for its registration retry). Raises :class:`PortBusyError`,
        :class:`MissingBinaryError` or :class:`ServiceStartError`.
        """
        workers = recorded_workers(ports)
        for extra in cluster_services(self.state_dir, recorded, recorded_workers(recorded))[workers + 1 :]:
            stop_service(extra)
        master, *rest = cluster_services(self.state_dir, ports, workers)
        for group in ([master], rest):
            pids = {service.name: self._pid(service.name) or self._launch(service) for service in group}
            for service in group:
                wait_healthy(service, pids[service.name])

    @staticmethod
    def _launch(service: SparkService) -> int:
        """Start ``service`` without waiting for it; returns its pid."""
        service.preflight()
        return launch(service)

    def down(self, recorded: Mapping[str, int]) -> None:
        """Stop every worker, then the master; returns when none of their processes is left."""
        for service in reversed(cluster_services(self.state_dir, recorded, recorded_workers(recorded))):
            stop_service(service)

    def status(self, recorded: Mapping[str, int]) -> dict[str, dict[str, Any]]:
        """``spark-master`` and ``spark-worker-<n>`` entries shaped like the other services'.

        The master's adds ``url`` (the ``--master`` value), ``webui`` and ``workers_alive``
        (how many workers it lists as ALIVE); each worker's adds ``work_dir``.
        """
        result: dict[str, dict[str, Any]] = {}
        webui = recorded[MASTER_PORT_KEYS[1]]
        alive = alive_worker_ports(webui)
        for service in cluster_services(self.state_dir, recorded, recorded_workers(recorded)):
            pid = self._pid(service.name)
            entry = status_entry(service, pid, healthy=pid is not None and service.healthy())
            if service.name == MASTER:
                entry.update(
                    url=master_url(recorded),
                    webui=f"http://127.0.0.1:{webui}",
                    workers_alive=len(alive) if master_json(webui) is not None else 0,
                )
            elif isinstance(service, SparkWorkerService):
                entry["work_dir"] = str(service.work_dir)
            result[service.name] = entry
        return result
