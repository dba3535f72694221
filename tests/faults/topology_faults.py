"""Randomized-mode fault kinds that need a bigger topology than one node of each (docs/scale.md).

Each kind holds the Spark tasks after their first HBase segment (``spark.task.after_segment``
in hang mode), acts on the cluster while they stand there, releases them and returns the
write's exit status; the randomized mode then checks the epoch's state and runs the next
stream run (recover first) as for every other write fault. The cluster is whole again when
a kind returns (a killed node or server restarted and caught up), so the next round starts
from the same topology.

Which kinds a run draws follows the fault stack's topology (:func:`topology_kinds`): set
``EO_FAULT_TOPOLOGY`` (for example ``kafka_brokers=3,hbase_regionservers=2,thrift_servers=2``)
to run the fault suite's stack with it.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from pathlib import Path

import happybase

from eo_devtools.stack.hbase_admin import HBaseTableTool
from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.topology import Topology, TopologyError, instance_name
from tests.faults import kafka_brokers
from tests.faults.harness import Case, hang_env

TOPOLOGY_ENV = "EO_FAULT_TOPOLOGY"
HANG = "spark.task.after_segment:hang"
#: Tasks that run at once: the harness's spark-submit runs ``local[2]``.
CONCURRENT_TASKS = 2

#: How many times a region split is asked for before the fault fails (see :func:`_split`).
SPLIT_TRIES = 3
#: The pause before the next try when the compaction was refused as well.
SPLIT_RETRY_PAUSE_S = 10

#: Kind -> what the stack's topology must have for it.
REQUIREMENTS: dict[str, Callable[[Topology], bool]] = {
    "kafka.leader_kill9_mid_write": lambda t: t.kafka_brokers >= 3,
    "kafka.controller_kill9_mid_write": lambda t: t.kafka_brokers >= 3,
    "hbase.region_split_mid_write": lambda t: t.hbase_regionservers >= 2,
    "hbase.region_move_mid_write": lambda t: t.hbase_regionservers >= 2,
    "thrift.failover_mid_write": lambda t: t.thrift_servers >= 2,
}
TOPOLOGY_FAULTS = tuple(REQUIREMENTS)


def topology_from_env() -> Topology | None:
    """The fault stack's topology named by ``EO_FAULT_TOPOLOGY`` (``field=N,...``), or None
    (the default topology); :class:`TopologyError` names a bad entry."""
    text = os.environ.get(TOPOLOGY_ENV, "").strip()
    if not text:
        return None
    counts: dict[str, int] = {}
    for entry in text.split(","):
        name, _, value = entry.partition("=")
        if name.strip() not in Topology.__dataclass_fields__ or not value.strip().isdigit():
            raise TopologyError(f"{TOPOLOGY_ENV}: bad entry {entry!r}; expected field=N of {Topology()}")
        counts[name.strip()] = int(value)
    return Topology(**counts)


def topology_kinds(topology: Topology) -> tuple[str, ...]:
    """The kinds of :data:`TOPOLOGY_FAULTS` that ``topology`` can run."""
    return tuple(kind for kind, needs in REQUIREMENTS.items() if needs(topology))


def inject_topology_fault(
    case: Case, kind: str, epoch_id: int, rng: random.Random, tag: str, workdir: Path
) -> int:
    """Write ``epoch_id`` with fault ``kind`` (see the module docstring); the write's exit status."""
    release = workdir / f"release-{tag}"
    proc = case.start_write(epoch_id, faults=HANG, **hang_env(240, release))
    proc.wait_for_hanging(min(case.partitions, CONCURRENT_TASKS))
    restart = _act(case, kind, rng)
    release.touch()
    rc = proc.wait()
    assert rc in (0, 1, 4), proc.output()[-3000:]
    restart()
    return rc


def _act(case: Case, kind: str, rng: random.Random) -> Callable[[], None]:
    """Do ``kind``'s action on the cluster; returns what makes it whole again afterwards."""
    stack = case.stack
    if kind in ("kafka.leader_kill9_mid_write", "kafka.controller_kill9_mid_write"):
        if kind == "kafka.leader_kill9_mid_write":
            topic = case.spec.topics[0]
            node = kafka_brokers.partition_leader(stack, topic, rng.randrange(case.partitions))
        else:
            node = kafka_brokers.active_controller(stack)
        kafka_brokers.kill_node(stack, node)
        return lambda: kafka_brokers.restart_node(stack, node)
    if kind == "thrift.failover_mid_write":
        server = instance_name("hbase-thrift", rng.randint(1, stack.local.topology.thrift_servers))
        stack.kill(server)
        return lambda: stack.restart(server)
    tool = stack.table_tool
    table = case.spec.hbase_table
    if kind == "hbase.region_split_mid_write":
        _split(case, tool, table, rng)
    elif kind == "hbase.region_move_mid_write":
        tool.move(table, rng.choice(tool.regions(table)).name)
    else:
        raise AssertionError(f"unknown topology fault kind {kind}")
    return lambda: None


def _split(case: Case, tool: HBaseTableTool, table: str, rng: random.Random) -> None:
    """Split one of ``table``'s regions at a written row.

    HBase's master refuses to split a region that still holds reference files of an earlier
    split (until a compaction rewrites them) or one in transition (the balancer moving it).
    After a refusal the table is major-compacted and the split tried again at a fresh row,
    :data:`SPLIT_TRIES` times in all; the last refusal raises the tool's RuntimeError."""
    for attempt in range(1, SPLIT_TRIES + 1):
        starts = {region.start for region in tool.regions(table)}
        try:
            tool.split(table, _split_row(case, starts, rng))
            return
        except RuntimeError as refused:
            if attempt == SPLIT_TRIES:
                raise
            print(f"split of {table} refused (try {attempt}), compacting first: {str(refused)[:300]}")
            try:
                tool.major_compact(table)
            except RuntimeError as busy:  # a region in transition: give the master time instead
                print(f"compaction of {table} refused too: {str(busy)[:300]}")
                time.sleep(SPLIT_RETRY_PAUSE_S)


def _split_row(case: Case, region_starts: set[str], rng: random.Random) -> str:
    """A row the tasks have written that starts no region yet: the split point."""
    connection = happybase.Connection(LOOPBACK, case.stack.local.hbase_port)
    try:
        rows = [
            row.decode() for row, _ in connection.table(case.spec.hbase_table).scan(columns=[], limit=1000)
        ]
    finally:
        connection.close()
    candidates = sorted(set(rows) - region_starts)
    assert candidates, (
        f"no written row of {case.spec.hbase_table} to split at (region starts {region_starts})"
    )
    return rng.choice(candidates)
