"""The fault suite's cluster-topology stack: one stack for every case that needs more than one
node of a kind, run after the single-node cases so only one private stack runs at a time.

The cases that kill a Kafka partition leader, controller or coordinator, split or move an
HBase region, write many regions with many tasks, kill one of two Thrift servers, or kill the
scheduler or a task tree under a real Airflow all take the ``cluster_stack`` fixture
(tests/faults/conftest.py): one :class:`~tests.faults.harness.FaultStack` of
:data:`CLUSTER_TOPOLOGY`, started once for all of them. :func:`cluster_cases_last` moves
those cases behind every other case of ``tests/faults`` (their order among themselves
kept), and the fixture stops the single-node ``fault_stack`` before it starts the cluster:
the two stacks never share the 2 cores and the memory.

Set ``EO_FAULT_CLUSTER_STACK_DIR`` to a state dir to use (and keep) a developer's stack of
that topology instead (``eo-stack up --kafka-brokers 3 --hbase-regionservers 2
--thrift-servers 2 --state-dir DIR``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pytest

from eo_devtools.stack.process import running_pid
from eo_devtools.stack.stack import service_classes
from eo_devtools.stack.topology import Topology
from tests.faults.harness import FaultStack
from tests.faults.kafka_brokers import wait_cluster_whole

#: 3 KRaft nodes (each broker and controller), 2 region servers, 2 Thrift servers.
CLUSTER_TOPOLOGY = Topology(kafka_brokers=3, hbase_regionservers=2, thrift_servers=2)
CLUSTER_STACK_DIR_ENV = "EO_FAULT_CLUSTER_STACK_DIR"
CLUSTER_FIXTURE = "cluster_stack"
SINGLE_NODE_FIXTURE = "fault_stack"
FAULTS_DIR = Path(__file__).resolve().parent


def cluster_cases_last(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: the ``tests/faults`` items that use :data:`CLUSTER_FIXTURE`
    go right after the last other ``tests/faults`` item; every other order is kept.

    Raises ``pytest.UsageError`` naming a test that asks for both stacks (the single-node one
    is stopped once the cluster starts)."""
    faults = [i for i, item in enumerate(items) if _in_faults(item)]
    if not faults:
        return
    both = [
        item.nodeid for item in items if _uses(item, CLUSTER_FIXTURE) and _uses(item, SINGLE_NODE_FIXTURE)
    ]
    if both:
        raise pytest.UsageError(f"{both[0]}: asks for both {CLUSTER_FIXTURE} and {SINGLE_NODE_FIXTURE}")
    block = items[faults[0] : faults[-1] + 1]
    ordered = _stable_partition(block, lambda item: not (_in_faults(item) and _uses(item, CLUSTER_FIXTURE)))
    items[faults[0] : faults[-1] + 1] = ordered


def _in_faults(item: pytest.Item) -> bool:
    return FAULTS_DIR in Path(str(item.path)).resolve().parents


def _uses(item: pytest.Item, fixture: str) -> bool:
    return fixture in getattr(item, "fixturenames", ())


def _stable_partition(
    items: Sequence[pytest.Item], first: Callable[[pytest.Item], bool]
) -> list[pytest.Item]:
    head = [item for item in items if first(item)]
    return head + [item for item in items if not first(item)]


def retire(stacks: Iterable[FaultStack]) -> None:
    """Stop each single-node stack (idempotent: their fixtures' teardown then finds them down)."""
    for stack in stacks:
        stack.down()


def restore_whole(stack: FaultStack) -> None:
    """Start whatever of ``stack`` a case left stopped (a killed node or server: its pid file
    names no live process; no health probe, which costs seconds on a loaded machine) and wait
    until the Kafka cluster is whole (every broker registered, every partition's ISR full)."""
    stopped = [
        service
        for service in service_classes(stack.local.topology)
        if running_pid(stack.local.state_dir / "pids" / f"{service}.pid") is None
    ]
    if not stopped:
        return
    print(f"cluster stack: restarting {stopped} after the case")
    stack.up()
    wait_cluster_whole(stack)
