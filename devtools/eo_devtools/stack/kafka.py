"""Apache Kafka for the local stack: KRaft nodes that are both broker and controller.

One node by default (a dynamic quorum formatted ``--standalone``); with
``Topology(kafka_brokers=N)`` N such nodes form a cluster (:mod:`.kafka_cluster`: static
quorum of N voters, replication factor 3, ``min.insync.replicas`` 2).
Layout under ``<state>/kafka/`` (``<state>/kafka-N/`` for node N): ``server.properties``,
``log4j2.yaml`` and ``data/`` (the log dirs and the KRaft metadata log). The storage is
formatted once (``meta.properties`` marks it), so topics and records survive ``down`` then ``up``.
"""

from __future__ import annotations

import base64
import logging
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from eo_devtools.stack import kafka_cluster
from eo_devtools.stack.java_service import JavaService
from eo_devtools.stack.jvm_artifacts import classpath, java_binary
from eo_devtools.stack.ports import LOOPBACK, accepts_connections
from eo_devtools.stack.process import ServiceStartError


def log4j2_config(pattern: str, logger_levels: dict[str, str]) -> str:
    """A log4j2 YAML configuration: INFO to stdout in ``pattern``, with ``logger_levels``."""
    loggers = "".join(
        f"      - name: {name}\n        level: {level}\n" for name, level in logger_levels.items()
    )
    return (
        "Configuration:\n  Appenders:\n    Console:\n      name: STDOUT\n      PatternLayout:\n"
        f'        Pattern: "{pattern}"\n'
        f"  Loggers:\n    Logger:\n{loggers}"
        "    Root:\n      level: INFO\n      AppenderRef:\n        - ref: STDOUT\n"
    )


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (as ``random-uuid``),
    never starting with ``-`` (as Kafka's ``Uuid.randomUuid``): the storage tool would read
    such an id as an option and refuse to format (one fresh stack in 64 failed to start)."""
    while (cluster_id := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return cluster_id


class KafkaService(JavaService):
    """Apache Kafka (KRaft, combined broker+controller) on 127.0.0.1:``port`` (PLAINTEXT)."""

    name = "kafka"
    port_keys = ("kafka", "kafka-controller")
    component = "kafka"
    main_class = "kafka.Kafka"
    heap = "768m"
    stop_grace_s = 30.0
    startup_timeout_s = 90.0
    log_pattern = "[%d] %p %m (%c)%n"
    #: Chatty loggers quietened; a subclass may add (e.g. DEBUG for one it reads).
    logger_levels: dict[str, str] = {
        "kafka.request.logger": "WARN",
        "org.apache.kafka.controller": "WARN",
        "state.change.logger": "WARN",
    }

    def __init__(self, state_dir: Path, ports: Mapping[str, int]) -> None:
        super().__init__(state_dir, ports)
        if self.clustered:
            self.heap = "512m"  # N JVMs on one machine

    @property
    def clustered(self) -> bool:
        """True when this node is one of several (:mod:`.kafka_cluster`)."""
        return self.topology.kafka_brokers > 1

    def launch_group(self) -> str:
        """Every node of a cluster is launched before the stack waits for any: a quorum of
        several voters elects no leader while only the first node runs."""
        return "kafka" if self.clustered else self.name

    @property
    def home(self) -> Path:
        return kafka_cluster.node_home(self.state_dir, self.replica_index)

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for Kafka clients."""
        return f"{LOOPBACK}:{self.port}"

    def listeners(self) -> dict[str, tuple[str, int]]:
        """Client listeners: name -> (security protocol, port). The controller's is added apart."""
        return {"PLAINTEXT": ("PLAINTEXT", self.port)}

    def server_properties(self) -> dict[str, str]:
        """Every broker setting the stack sets (sized for one machine with 2 cores)."""
        controller = f"{LOOPBACK}:{self.ports[self.port_keys[1]]}"
        listeners = self.listeners()
        protocols = {name: protocol for name, (protocol, _port) in listeners.items()}
        brokers = self.topology.kafka_brokers
        quorum = (
            {"controller.quorum.voters": kafka_cluster.quorum_voters(self.ports, brokers)}
            if self.clustered
            else {"controller.quorum.bootstrap.servers": controller}
        )
        properties = {
            "process.roles": "broker,controller",
            "node.id": str(self.replica_index),
            **quorum,
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(
                [f"{name}://{LOOPBACK}:{port}" for name, (_p, port) in listeners.items()]
                + [f"CONTROLLER://{controller}"]
            ),
            "advertised.listeners": ",".join(
                f"{name}://{LOOPBACK}:{port}" for name, (_p, port) in listeners.items()
            ),
            "listener.security.protocol.map": ",".join(
                [f"{name}:{protocol}" for name, protocol in protocols.items()] + ["CONTROLLER:PLAINTEXT"]
            ),
            "inter.broker.listener.name": next(iter(listeners)),
            "log.dirs": str(self.data_dir),
            "auto.create.topics.enable": "false",
            "num.partitions": "1",
            "num.network.threads": "2",
            "num.io.threads": "4",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # After a kill -9 the KRaft controller (same JVM, restarted with it) refuses the
            # new incarnation's registration until the dead one's session expires: 2.5 s
            # here instead of 9 s, so a crashed broker serves again seconds sooner.
            "broker.session.timeout.ms": "2500",
            "broker.heartbeat.interval.ms": "500",
            # The log cleaner looks for compactable segments every second (tests compact topics).
            "log.cleaner.backoff.ms": "1000",
            "log.retention.check.interval.ms": "10000",
        }
        if self.clustered:
            properties.update(kafka_cluster.cluster_properties(brokers))
        return properties

    def config_dirs(self) -> list[Path]:
        return [self.home]

    def jvm_options(self) -> list[str]:
        return [f"-Dlog4j2.configurationFile={self.home / 'log4j2.yaml'}", "-Xms256m"]

    def program_args(self) -> list[str]:
        return [str(self.home / "server.properties")]

    def preflight(self) -> None:
        """The JVM and jars, and Kafka data (if any) formatted for this many brokers
        (:class:`.kafka_cluster.ClusterSizeError` otherwise)."""
        super().preflight()
        kafka_cluster.check_size(self.state_dir, self.topology.kafka_brokers)

    def format_args(self) -> list[str]:
        """How the storage is formatted: ``--standalone`` with a fresh id for a single node,
        the cluster's shared id (static voters) for a node of a cluster."""
        if not self.clustered:
            return ["--standalone", "--cluster-id", random_cluster_id()]
        brokers = self.topology.kafka_brokers
        return ["--cluster-id", kafka_cluster.shared_cluster_id(self.state_dir, brokers, random_cluster_id())]

    def prepare(self) -> None:
        """Write the configuration; format the storage the first time (:meth:`format_args`)."""
        if self.clustered:
            kafka_cluster.check_size(self.state_dir, self.topology.kafka_brokers)
        self.home.mkdir(parents=True, exist_ok=True)
        properties = "".join(f"{key}={value}\n" for key, value in self.server_properties().items())
        (self.home / "server.properties").write_text(properties)
        (self.home / "log4j2.yaml").write_text(log4j2_config(self.log_pattern, self.logger_levels))
        if (self.data_dir / "meta.properties").exists():
            return
        result = subprocess.run(
            [
                java_binary(),
                f"-Dlog4j2.configurationFile={self.home / 'log4j2.yaml'}",
                "-cp",
                classpath(self.component, self.home),
                "kafka.tools.StorageTool",
                "format",
                *self.format_args(),
                "--config",
                str(self.home / "server.properties"),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise ServiceStartError(
                f"{self.name}: formatting the KRaft storage in {self.data_dir} failed:\n"
                f"{(result.stdout + result.stderr)[-3000:]}"
            )

    def healthy(self) -> bool:
        """True when a metadata request over this node's client listener names a broker (a node
        of a cluster: names this node, i.e. it registered with the quorum and is unfenced)."""
        if not accepts_connections(self.port):
            return False
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "logger": logging.getLogger("eo_devtools.stack.kafka"),
        }
        try:
            metadata = AdminClient(config).list_topics(timeout=3)
        except Exception:
            return False
        if self.clustered:
            return self.replica_index in metadata.brokers
        return len(metadata.brokers) > 0
