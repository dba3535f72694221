"""The local stack's topology: instance names, port keys, the record, and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eo_devtools.stack.cli import _parser, requested_topology
from eo_devtools.stack.stack import LocalStack, service_classes
from eo_devtools.stack.topology import Topology, TopologyError


def test_default_topology_runs_the_five_services_under_their_names() -> None:
    classes = service_classes(Topology())
    assert list(classes) == ["postgres", "kafka", "hbase", "hbase-thrift", "schema-registry"]
    assert classes["kafka"].port_keys == ("kafka", "kafka-controller")


def test_replicated_services_get_numbered_names_and_port_keys() -> None:
    topology = Topology(kafka_brokers=3, hbase_regionservers=2, thrift_servers=2)
    classes = service_classes(topology)
    assert list(classes) == [
        "postgres",
        "kafka",
        "kafka-2",
        "kafka-3",
        "hbase",
        "hbase-thrift",
        "hbase-thrift-2",
        "schema-registry",
    ]
    assert classes["kafka-3"].port_keys == ("kafka-3", "kafka-3-controller")
    assert classes["hbase-thrift-2"].port_keys == ("hbase-thrift-2",)
    assert [classes[name].replica_index for name in ("kafka", "kafka-2", "kafka-3")] == [1, 2, 3]
    assert all(cls.topology == topology for cls in classes.values())


@pytest.mark.parametrize("field", ["kafka_brokers", "hbase_regionservers", "thrift_servers"])
def test_counts_out_of_range_are_refused_naming_the_field(field: str) -> None:
    with pytest.raises(TopologyError, match=f"topology: {field} must be an integer from 1 to"):
        Topology(**{field: 0})


def test_the_record_round_trips_and_an_old_record_means_the_default(tmp_path: Path) -> None:
    topology = Topology(kafka_brokers=3, thrift_servers=2)
    assert Topology.from_record(topology.to_record()) == topology
    assert Topology.from_record(None) == Topology()
    (tmp_path / "stack.json").write_text(json.dumps({"ports": {"kafka": 20001}}))
    assert LocalStack(tmp_path).topology == Topology()


def test_flags_change_only_what_they_name() -> None:
    recorded = Topology(kafka_brokers=3, thrift_servers=2)
    assert requested_topology(_parser().parse_args(["up"]), recorded) is None
    args = _parser().parse_args(["up", "--thrift-servers", "3"])
    assert requested_topology(args, recorded) == Topology(kafka_brokers=3, thrift_servers=3)
