"""What the local stack needs to know about one service (PostgreSQL, Kafka, HBase, Thrift)."""

from __future__ import annotations

import os
import signal
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path

from eo_devtools.stack.topology import Topology, instance_name, instance_port_key


class MissingBinaryError(RuntimeError):
    """A program a service needs is not installed; the message says what to install."""


class Service(ABC):
    """One long-running local service listening on 127.0.0.1.

    ``port_keys`` names the ports the service binds (the first is the one clients use,
    :attr:`port`); the stack hands every service the whole ``ports`` map, so a service
    can also reach the ports of the services it depends on. Subclasses describe how to
    prepare, start and probe the service; the stack (:mod:`.stack`) does the process
    handling. ``topology`` is the stack's (:mod:`.topology`); ``replica_index`` says which
    instance of a replicated service this is (1 for the first, which keeps the plain name).
    """

    name: str = ""
    port_keys: tuple[str, ...] = ()
    topology: Topology = Topology()
    replica_index: int = 1
    stop_signal: int = signal.SIGTERM
    stop_grace_s: float = 15.0
    startup_timeout_s: float = 30.0

    def __init__(self, state_dir: Path, ports: Mapping[str, int]) -> None:
        self.state_dir = state_dir
        self.ports = dict(ports)

    @classmethod
    def configured(cls, topology: Topology, index: int = 1) -> type[Service]:
        """This service class for ``topology``, as instance ``index``: a subclass whose
        ``name`` and ``port_keys`` are the instance's (:func:`.topology.instance_name`)."""
        attributes = {
            "name": instance_name(cls.name, index),
            "port_keys": tuple(instance_port_key(cls.name, key, index) for key in cls.port_keys),
            "topology": topology,
            "replica_index": index,
        }
        return type(cls.__name__, (cls,), attributes)

    @property
    def port(self) -> int:
        """The port clients connect to."""
        return self.ports[self.port_keys[0]]

    @property
    def log_path(self) -> Path:
        """Where the service's stdout and stderr go."""
        return self.state_dir / "logs" / f"{self.name}.log"

    @property
    def pid_path(self) -> Path:
        """Where the service's pid is stored (also its process group id)."""
        return self.state_dir / "pids" / f"{self.name}.pid"

    def preflight(self) -> None:  # noqa: B027 - optional hook
        """Check that what the service needs is installed; raise :class:`MissingBinaryError` if not.

        The stack runs every service's preflight before it starts any service.
        """

    def launch_group(self) -> str:
        """Services of one group are all launched before the stack waits for any of them (the
        nodes of a quorum that cannot answer alone); by default each is a group of its own."""
        return self.name

    def prepare(self) -> None:  # noqa: B027 - optional hook
        """One-time, idempotent preparation before the first start (e.g. initdb)."""

    @abstractmethod
    def argv(self) -> list[str]:
        """The command line that runs the service in the foreground. No secrets in it."""

    def cwd(self) -> Path:
        """Working directory of the service process (inside the state dir)."""
        return self.state_dir

    def run_as(self) -> str | None:
        """OS user to run the service as, or None for the current user."""
        return None

    def environment(self) -> dict[str, str]:
        """Environment of the service process."""
        env = dict(os.environ)
        env["EO_STACK_STATE_DIR"] = str(self.state_dir)
        return env

    @abstractmethod
    def healthy(self) -> bool:
        """True when the service answers a real request."""

    def after_start(self) -> None:  # noqa: B027 - optional hook
        """Idempotent setup once the service is healthy (e.g. create the database)."""
