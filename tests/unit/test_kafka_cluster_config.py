"""The Kafka nodes' configuration for 1 and 3 brokers (no JVM: the settings and the state files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eo_devtools.stack import kafka_cluster
from eo_devtools.stack.kafka import KafkaService
from eo_devtools.stack.stack import service_classes
from eo_devtools.stack.topology import Topology

PORTS = {
    "kafka": 21001,
    "kafka-controller": 21002,
    "kafka-2": 21003,
    "kafka-2-controller": 21004,
    "kafka-3": 21005,
    "kafka-3-controller": 21006,
}


def _node(tmp_path: Path, topology: Topology, name: str) -> KafkaService:
    service = service_classes(topology)[name](tmp_path, PORTS)
    assert isinstance(service, KafkaService)
    return service


def test_a_single_node_keeps_its_standalone_quorum_and_replication_1(tmp_path: Path) -> None:
    node = _node(tmp_path, Topology(), "kafka")
    properties = node.server_properties()
    assert properties["node.id"] == "1"
    assert properties["controller.quorum.bootstrap.servers"] == "127.0.0.1:21002"
    assert "controller.quorum.voters" not in properties
    assert "default.replication.factor" not in properties
    assert properties["offsets.topic.replication.factor"] == "1"
    assert (node.home, node.heap, node.launch_group()) == (tmp_path / "kafka", "768m", "kafka")
    assert node.format_args()[0] == "--standalone"


def test_each_node_of_a_cluster_is_a_voter_with_replication_3(tmp_path: Path) -> None:
    node = _node(tmp_path, Topology(kafka_brokers=3), "kafka-2")
    properties = node.server_properties()
    assert properties["node.id"] == "2"
    assert properties["controller.quorum.voters"] == ("1@127.0.0.1:21002,2@127.0.0.1:21004,3@127.0.0.1:21006")
    assert "controller.quorum.bootstrap.servers" not in properties
    assert properties["listeners"] == "PLAINTEXT://127.0.0.1:21003,CONTROLLER://127.0.0.1:21004"
    assert {key: properties[key] for key in kafka_cluster.cluster_properties(3)} == {
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
        "unclean.leader.election.enable": "false",
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
    }
    assert (node.home, node.heap, node.launch_group()) == (tmp_path / "kafka-2", "512m", "kafka")


def test_every_node_formats_with_the_recorded_cluster_id(tmp_path: Path) -> None:
    first = _node(tmp_path, Topology(kafka_brokers=3), "kafka").format_args()
    third = _node(tmp_path, Topology(kafka_brokers=3), "kafka-3").format_args()
    assert first[0] == "--cluster-id" and first == third
    record = json.loads((tmp_path / kafka_cluster.RECORD_FILE).read_text())
    assert record == {"cluster_id": first[1], "brokers": 3}


def test_data_of_another_cluster_size_is_refused_naming_both_sizes(tmp_path: Path) -> None:
    kafka_cluster.check_size(tmp_path, 3)  # nothing formatted yet
    (tmp_path / "kafka" / "data").mkdir(parents=True)
    (tmp_path / "kafka" / "data" / "meta.properties").write_text("node.id=1\n")
    kafka_cluster.check_size(tmp_path, 1)
    with pytest.raises(
        kafka_cluster.ClusterSizeError, match=r"formatted for 1 broker\(s\), this stack asks for 3"
    ):
        kafka_cluster.check_size(tmp_path, 3)
    kafka_cluster.shared_cluster_id(tmp_path, 3, "abc")
    with pytest.raises(kafka_cluster.ClusterSizeError, match="--kafka-brokers 3"):
        kafka_cluster.check_size(tmp_path, 1)
