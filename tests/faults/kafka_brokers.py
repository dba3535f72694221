"""Faults of a Kafka cluster (``Topology(kafka_brokers=3)``): which node leads what, kill one, restart it.

A node of the stack's cluster is a KRaft node that is both broker and controller; its
service name is ``kafka`` (node id 1), ``kafka-2``, ``kafka-3`` (:func:`node_name`).

* :func:`partition_leader`: the node leading a topic-partition (the brokers' metadata);
* :func:`active_controller`: the node leading the KRaft metadata quorum. Kafka's metadata
  response names a random broker as "controller" in KRaft mode and the stack's classpath
  has no ``kafka-metadata-quorum`` tool, so this reads the quorum's own record: the
  ``RaftManager`` lines ``Completed transition to Leader(...epoch=E...)`` each node logs when it
  becomes the quorum's leader; the one of the highest epoch leads now;
* :func:`kill_node` (``kill -9`` of the node's process group), :func:`restart_node` (the
  stack's ``up`` starts what is missing) and :func:`wait_cluster_whole`: every broker
  registered again and every partition's ISR back to its full replica set.
"""

from __future__ import annotations

import re
import signal
import time

from confluent_kafka.admin import AdminClient

from eo_devtools.stack.topology import instance_name
from tests.faults.harness import FaultStack

LEADER_RE = re.compile(r"\[RaftManager id=(\d+)\] Completed transition to Leader\(.*?\bepoch=(\d+)")
#: How long a restarted node may take to rejoin and catch its replicas up.
REJOIN_TIMEOUT_S = 180.0


def node_name(node_id: int) -> str:
    """The stack's service name of node ``node_id``: ``kafka``, ``kafka-2``, ..."""
    return instance_name("kafka", node_id)


def node_id(name: str) -> int:
    """The node id of service ``name`` (``kafka`` -> 1, ``kafka-3`` -> 3)."""
    return 1 if name == "kafka" else int(name.rsplit("-", 1)[1])


def _admin(stack: FaultStack) -> AdminClient:
    return AdminClient({"bootstrap.servers": stack.bootstrap})


def partition_leader(stack: FaultStack, topic: str, partition: int) -> str:
    """The service name of the broker leading ``topic``[``partition``]; AssertionError when leaderless."""
    metadata = _admin(stack).list_topics(topic, timeout=10)
    leader = metadata.topics[topic].partitions[partition].leader
    assert leader > 0, f"{topic}[{partition}] has no leader"
    return node_name(leader)


def active_controller(stack: FaultStack) -> str:
    """The service name of the KRaft quorum's leader (the active controller), from the nodes'
    logs (see the module docstring); AssertionError when no node has led a quorum yet."""
    best: tuple[int, int] | None = None  # (epoch, node id)
    for index in range(1, stack.local.topology.kafka_brokers + 1):
        log = stack.local.state_dir / "logs" / f"{node_name(index)}.log"
        for match in LEADER_RE.finditer(log.read_text(errors="replace")):
            candidate = (int(match.group(2)), int(match.group(1)))
            best = candidate if best is None or candidate > best else best
    assert best is not None, "no Kafka node has become the quorum's leader"
    return node_name(best[1])


def kill_node(stack: FaultStack, name: str) -> None:
    """``kill -9`` node ``name`` (its whole process group); returns once it is gone."""
    stack.kill(name, signal.SIGKILL)


def restart_node(stack: FaultStack, name: str) -> None:
    """Start the killed node ``name`` again and wait until the cluster is whole
    (:func:`wait_cluster_whole`); the restart's duration goes to ``stack.restarts``."""
    started = time.monotonic()
    stack.up()
    wait_cluster_whole(stack)
    stack.restarts.append((name, round(time.monotonic() - started, 1)))


def cluster_gaps(stack: FaultStack) -> str | None:
    """None when every broker of the topology is registered and every partition of every
    topic has a leader and its whole replica set in sync; else what is missing."""
    expected = set(range(1, stack.local.topology.kafka_brokers + 1))
    try:
        metadata = _admin(stack).list_topics(timeout=5)
    except Exception as exc:
        return f"metadata: {exc}"
    if set(metadata.brokers) != expected:
        return f"brokers {sorted(metadata.brokers)} of {sorted(expected)}"
    for name, topic in metadata.topics.items():
        for number, partition in topic.partitions.items():
            if partition.leader < 0 or sorted(partition.isrs) != sorted(partition.replicas):
                return (
                    f"{name}[{number}] leader {partition.leader} ISR {partition.isrs} of {partition.replicas}"
                )
    return None


def wait_cluster_whole(stack: FaultStack, timeout: float = REJOIN_TIMEOUT_S) -> None:
    """Wait (bounded) until :func:`cluster_gaps` finds none and the stack's Kafka readiness
    holds (group coordinators loaded); AssertionError naming the gap after ``timeout``."""
    deadline = time.monotonic() + timeout
    while (gap := cluster_gaps(stack)) is not None:
        assert time.monotonic() < deadline, f"Kafka cluster not whole {timeout:g} s after a restart: {gap}"
        time.sleep(0.5)
    stack.wait_ready("kafka", timeout)


def replicas(stack: FaultStack, topic: str, partition: int) -> tuple[list[int], list[int]]:
    """(replicas, ISR) of ``topic``[``partition``], node ids sorted."""
    found = _admin(stack).list_topics(topic, timeout=10).topics[topic].partitions[partition]
    return sorted(found.replicas), sorted(found.isrs)
