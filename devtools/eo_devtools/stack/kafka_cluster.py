"""A Kafka cluster of the local stack: N combined broker+controller KRaft nodes.

With ``Topology(kafka_brokers=N)``, N > 1, every instance of :class:`.kafka.KafkaService`
is a KRaft node that is both broker and controller (``node.id`` = its replica index), and all
N controllers are voters of a *static* quorum (``controller.quorum.voters`` lists every
instance's controller port): the storage is formatted with the shared cluster id and no
``--standalone``/``--initial-controllers``, which formats and starts reliably on Kafka 4.1.
A quorum of 3 voters elects no leader with one node alone, so the stack launches every
node before it waits for any (:meth:`.service.Service.launch_group`).

The cluster id is chosen on the first format and recorded with the cluster's size in
``<state>/kafka-cluster.json``; every node formats with it. Data formatted for another
cluster size (a 1-broker ``<state>/kafka/data`` started as 3 brokers, or the reverse) is
refused with :class:`ClusterSizeError` - never reformatted, because it holds topics and
records: ``eo-stack down`` and remove ``<state>/kafka*`` to change the size.

Settings of a cluster: new topics get ``default.replication.factor`` min(N, 3),
``min.insync.replicas`` 2, unclean leader election off; the offsets and transaction topics
are replicated min(N, 3) times with a min ISR of 2.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.topology import instance_name, instance_port_key

RECORD_FILE = "kafka-cluster.json"
CONTROLLER_KEY = "kafka-controller"


class ClusterSizeError(RuntimeError):
    """The Kafka data in the state dir was formatted for another number of brokers."""


def node_home(state_dir: Path, index: int) -> Path:
    """Home of node ``index``: ``<state>/kafka`` for the first, ``<state>/kafka-N`` for the others."""
    return state_dir / instance_name("kafka", index)


def quorum_voters(ports: Mapping[str, int], brokers: int) -> str:
    """``controller.quorum.voters``: ``1@127.0.0.1:<port>,2@...`` over every node's controller port."""
    return ",".join(
        f"{index}@{LOOPBACK}:{ports[instance_port_key('kafka', CONTROLLER_KEY, index)]}"
        for index in range(1, brokers + 1)
    )


def cluster_properties(brokers: int) -> dict[str, str]:
    """Replication settings of a cluster of ``brokers`` nodes (applied over the single node's)."""
    replicas = str(min(brokers, 3))
    min_isr = str(min(brokers, 2))
    return {
        "default.replication.factor": replicas,
        "min.insync.replicas": min_isr,
        "unclean.leader.election.enable": "false",
        "offsets.topic.replication.factor": replicas,
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": min_isr,
    }


def formatted_size(state_dir: Path) -> int | None:
    """How many brokers the state dir's Kafka data was formatted for (None: never formatted).

    A cluster's size is in :data:`RECORD_FILE`; data without it is a single node's."""
    try:
        return int(json.loads((state_dir / RECORD_FILE).read_text())["brokers"])
    except FileNotFoundError:
        pass
    return 1 if (node_home(state_dir, 1) / "data" / "meta.properties").exists() else None


def check_size(state_dir: Path, brokers: int) -> None:
    """Raise :class:`ClusterSizeError` when the state dir holds Kafka data of another size."""
    size = formatted_size(state_dir)
    if size is not None and size != brokers:
        raise ClusterSizeError(
            f"kafka: the data in {state_dir} was formatted for {size} broker(s), this stack asks "
            f"for {brokers}; it is kept as it is (it holds topics and records): run eo-stack down "
            f"and remove {state_dir}/kafka*, or start it with --kafka-brokers {size}"
        )


def shared_cluster_id(state_dir: Path, brokers: int, new_id: str) -> str:
    """The cluster id every node formats with: the recorded one, else ``new_id`` recorded now."""
    record = state_dir / RECORD_FILE
    try:
        return str(json.loads(record.read_text())["cluster_id"])
    except FileNotFoundError:
        record.write_text(json.dumps({"cluster_id": new_id, "brokers": brokers}, indent=2) + "\n")
        return new_id
