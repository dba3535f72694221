"""The local stack's optional YARN as a whole: start, stop, status, and the NodeManager alone.

``eo-stack up --yarn`` (or :meth:`LocalStack.yarn_up`) runs a ResourceManager and one
NodeManager (:mod:`.yarn_services`); their ports are recorded in ``stack.json`` beside the
other services' under the ``yarn-`` keys (:data:`.yarn_config.RM_PORT_KEYS`,
:data:`.yarn_config.NM_PORT_KEYS`). A stopped YARN's ports are forgotten, so ``status`` and
``conn_env`` only mention a YARN that was started and not stopped since. The NodeManager can
be stopped and started alone (fault tests kill it); it keeps its ports, hence its node id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.process import kill_with_groups, running_pid
from eo_devtools.stack.service_process import launch, start_service, status_entry, stop_service, wait_healthy
from eo_devtools.stack.yarn_config import NM_PORT_KEYS, RM_PORT_KEYS, client_conf_dir
from eo_devtools.stack.yarn_services import (
    NODE_MANAGER,
    RESOURCE_MANAGER,
    NodeManagerService,
    ResourceManagerService,
    YarnDaemon,
    container_processes,
    running_node_ids,
    webapp_url,
)

YARN_PORT_KEYS = (*RM_PORT_KEYS, *NM_PORT_KEYS)


def is_yarn_key(key: str) -> bool:
    """True for the port keys this module owns in ``stack.json``."""
    return key.startswith("yarn-")


class YarnCluster:
    """The YARN of the stack in ``state_dir`` (pids in ``pids/``, logs in ``logs/``)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def _pid(self, name: str) -> int | None:
        return running_pid(self.state_dir / "pids" / f"{name}.pid")

    def daemons(self, ports: Mapping[str, int]) -> list[YarnDaemon]:
        """The RM then the NM, in start order."""
        return [ResourceManagerService(self.state_dir, ports), NodeManagerService(self.state_dir, ports)]

    def choose_ports(self, recorded: Mapping[str, int]) -> dict[str, int]:
        """Port keys -> ports: recorded ones kept (the NM keeps its node id across restarts),
        others free and used by no recorded service."""
        taken = {port for key, port in recorded.items() if not is_yarn_key(key)}
        ports: dict[str, int] = {}
        for key in YARN_PORT_KEYS:
            port = recorded.get(key)
            while port is None or port in taken:
                port = find_free_port()
            taken.add(port)
            ports[key] = port
        return ports

    def start(self, recorded: Mapping[str, int], write_ports: Callable[[Mapping[str, int]], None]) -> None:
        """Run the RM, then the NM, until both are healthy; ``recorded`` is every port of
        ``stack.json``, rewritten through ``write_ports`` with YARN's ports (and without them
        again when the start fails). Running daemons are left alone. Raises
        :class:`PortBusyError`, :class:`MissingBinaryError` or :class:`ServiceStartError`."""
        core = {key: port for key, port in recorded.items() if not is_yarn_key(key)}
        ports = self.choose_ports(recorded)
        write_ports({**core, **ports})
        try:
            for daemon in self.daemons(ports):
                if self._pid(daemon.name) is None:
                    daemon.preflight()
                    wait_healthy(daemon, launch(daemon))
        except BaseException:
            self.down(ports)
            write_ports(core)
            raise

    def stop(self, recorded: Mapping[str, int], write_ports: Callable[[Mapping[str, int]], None]) -> None:
        """Stop the YARN ``recorded`` names, if any, and write the ports without it."""
        if RM_PORT_KEYS[0] in recorded:
            self.down(recorded)
            write_ports({key: port for key, port in recorded.items() if not is_yarn_key(key)})

    def down(self, ports: Mapping[str, int]) -> None:
        """Stop the NM (and its containers), then the RM; returns when none of their processes
        is left."""
        self.stop_nodemanager(ports)
        stop_service(ResourceManagerService(self.state_dir, ports))

    def stop_nodemanager(self, ports: Mapping[str, int]) -> None:
        """Stop the NodeManager alone (SIGTERM, SIGKILL after its grace) and SIGKILL whatever
        is left of its containers (:func:`.yarn_services.container_processes`); the RM stays up."""
        stop_service(NodeManagerService(self.state_dir, ports))
        kill_with_groups(container_processes(self.state_dir))

    def start_nodemanager(self, ports: Mapping[str, int]) -> int:
        """Start the NodeManager (same ports, same node id) unless it runs; wait until the RM
        lists it RUNNING; return its pid. Raises like :meth:`start`."""
        service = NodeManagerService(self.state_dir, ports)
        return self._pid(NODE_MANAGER) or start_service(service)

    def nodemanager_pid(self) -> int | None:
        """The running NodeManager's pid (also its process group), None when it is not running."""
        return self._pid(NODE_MANAGER)

    def status(self, recorded: Mapping[str, int]) -> dict[str, dict[str, Any]]:
        """``yarn-resourcemanager`` and ``yarn-nodemanager`` entries shaped like the other
        services'. The RM's adds ``url`` (web UI and REST), ``nodes_alive`` (nodes RUNNING)
        and ``hadoop_conf_dir`` (the client conf dir); the NM's adds ``node_id`` (None unless the
        RM lists it RUNNING)."""
        result: dict[str, dict[str, Any]] = {}
        rm_port = recorded[RM_PORT_KEYS[4]]
        for daemon in self.daemons(recorded):
            pid = self._pid(daemon.name)
            entry = status_entry(daemon, pid, healthy=pid is not None and daemon.healthy())
            if daemon.name == RESOURCE_MANAGER:
                alive = running_node_ids(rm_port) if pid is not None else set()
                entry.update(
                    url=webapp_url(rm_port),
                    nodes_alive=len(alive),
                    hadoop_conf_dir=str(client_conf_dir(self.state_dir)),
                )
            elif isinstance(daemon, NodeManagerService):
                entry["node_id"] = daemon.node_id() if pid is not None else None
            result[daemon.name] = entry
        return result
