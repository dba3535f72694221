"""StackPart: an optional part of the local stack, services started after the core ones.

Contract: a part's services run as the stack's processes (pids in ``pids/``, logs in ``logs/``);
their ports are recorded in ``stack.json`` under the part's :attr:`StackPart.port_keys` while the
part runs and forgotten when it stops. :meth:`StackPart.start` keeps recorded ports, picks free
ones for the others, starts the services in order and waits for each to answer; a failed start
stops what it started and forgets the ports again. The part's first port key says it runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.process import running_pid
from eo_devtools.stack.service import Service
from eo_devtools.stack.service_process import launch, status_entry, stop_service, wait_healthy

WritePorts = Callable[[Mapping[str, int]], None]


class StackPart(ABC):
    """The optional services of the stack in ``state_dir`` that share one switch."""

    #: Every port the part's services bind; the first one recorded means the part runs.
    port_keys: tuple[str, ...] = ()
    #: The ``AIRFLOW_CONN_*`` variable of the connection the part serves (:meth:`connection`).
    conn_var: str = ""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    @abstractmethod
    def services(self, ports: Mapping[str, int]) -> Sequence[Service]:
        """The part's services, in start order."""

    @abstractmethod
    def connection(self, recorded: Mapping[str, int]) -> str:
        """The value of :attr:`conn_var` for the part running on ``recorded``'s ports."""

    @classmethod
    def is_key(cls, key: str) -> bool:
        """Is ``key`` a port of this part?"""
        return key in cls.port_keys

    @classmethod
    def is_running(cls, recorded: Mapping[str, int]) -> bool:
        """Does ``recorded`` (``stack.json``'s ports) say the part runs?"""
        return cls.port_keys[0] in recorded

    def start(self, recorded: Mapping[str, int], write_ports: WritePorts) -> None:
        """Run the services in order until each answers; their ports (recorded ones kept)
        written through ``write_ports`` (and dropped again when the start fails)."""
        core = {key: port for key, port in recorded.items() if not self.is_key(key)}
        taken = set(core.values())
        ports: dict[str, int] = {}
        for key in self.port_keys:
            port = recorded.get(key)
            while port is None or port in taken:
                port = find_free_port()
            taken.add(port)
            ports[key] = port
        write_ports({**core, **ports})
        try:
            for service in self.services({**core, **ports}):
                if running_pid(service.pid_path) is None:
                    service.preflight()
                    wait_healthy(service, launch(service))
        except BaseException:
            self.down({**core, **ports})
            write_ports(core)
            raise

    def stop(self, recorded: Mapping[str, int], write_ports: WritePorts) -> None:
        """Stop the part ``recorded`` names, if any, and write the ports without it."""
        if self.is_running(recorded):
            self.down(recorded)
            write_ports({key: port for key, port in recorded.items() if not self.is_key(key)})

    def down(self, ports: Mapping[str, int]) -> None:
        """Stop the services, last started first."""
        for service in reversed(self.services(ports)):
            stop_service(service)

    def status(self, recorded: Mapping[str, int]) -> dict[str, dict[str, Any]]:
        """service name -> its status entry (:func:`.service_process.status_entry`)."""
        result = {}
        for service in self.services(recorded):
            pid = running_pid(service.pid_path)
            result[service.name] = status_entry(service, pid, healthy=pid is not None and service.healthy())
        return result
