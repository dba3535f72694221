"""The local stack's topology: how many Kafka brokers, HBase region servers and Thrift servers.

The default is one of each (the stack as it always was). ``eo-stack up --kafka-brokers 3
--hbase-regionservers 2 --thrift-servers 2`` asks for more; the stack records the topology
in ``stack.json`` beside the ports, and every later ``up``, ``status``, ``env`` and ``down``
uses the recorded one until ``down`` has stopped everything.

A service that can run several times is *replicated*: its first instance keeps the service's
name and port keys (``kafka``, ``hbase-thrift``), the N-th is named ``<name>-N`` with its
port keys renamed the same way (``kafka-2``, ``kafka-2-controller``, ``hbase-thrift-2``).
HBase's region servers are not separate services: they live in the master's JVM (HBase's
``LocalHBaseCluster``), so :attr:`Topology.hbase_regionservers` is configuration of the
``hbase`` service.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

#: Service name -> the topology field that says how many instances run.
REPLICATED: Mapping[str, str] = {"kafka": "kafka_brokers", "hbase-thrift": "thrift_servers"}

#: The largest count each field accepts (one machine with 2 cores and 24 GB).
LIMITS: Mapping[str, int] = {"kafka_brokers": 5, "hbase_regionservers": 4, "thrift_servers": 4}


class TopologyError(RuntimeError):
    """A topology that cannot run, or one that differs from the running stack's."""


@dataclass(frozen=True)
class Topology:
    """How many instances of each scalable part the stack runs (every count >= 1)."""

    kafka_brokers: int = 1
    hbase_regionservers: int = 1
    thrift_servers: int = 1

    def __post_init__(self) -> None:
        for name, limit in LIMITS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or not 1 <= value <= limit:
                raise TopologyError(f"topology: {name} must be an integer from 1 to {limit}, got {value!r}")

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> Topology:
        """The topology recorded in ``stack.json`` (the default when none is recorded)."""
        return cls(**{key: int(value) for key, value in (record or {}).items() if key in LIMITS})

    def to_record(self) -> dict[str, int]:
        """The ``stack.json`` form."""
        return asdict(self)

    def replicas(self, service: str) -> int:
        """How many instances of ``service`` run (1 for a service that is not replicated)."""
        field = REPLICATED.get(service)
        return int(getattr(self, field)) if field else 1

    def instances(self, service: str) -> list[str]:
        """The instance names of ``service`` in this topology (``kafka``, ``kafka-2``, ...)."""
        return [instance_name(service, index) for index in range(1, self.replicas(service) + 1)]

    def describe(self) -> str:
        """``3 Kafka brokers, 2 HBase region servers, 2 Thrift servers`` (for messages)."""
        return (
            f"{self.kafka_brokers} Kafka broker(s), {self.hbase_regionservers} HBase region server(s), "
            f"{self.thrift_servers} Thrift server(s)"
        )


def instance_name(service: str, index: int) -> str:
    """The name of instance ``index`` (1-based) of ``service``: ``kafka``, ``kafka-2``, ..."""
    return service if index == 1 else f"{service}-{index}"


def instance_port_key(service: str, key: str, index: int) -> str:
    """Port key ``key`` of ``service`` renamed for instance ``index``:
    ``kafka-controller`` of instance 2 is ``kafka-2-controller``."""
    if index == 1:
        return key
    return instance_name(service, index) + key.removeprefix(service)
