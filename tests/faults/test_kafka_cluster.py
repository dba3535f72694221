"""A node of a 3-node Kafka cluster killed mid-epoch (the suite's shared cluster stack).

The suite's ``cluster_stack`` (tests/faults/cluster_topology.py) runs three KRaft nodes that are each broker
and controller, topics replicated 3 times with ``min.insync.replicas`` 2 and unclean leader
election off (:mod:`eo_devtools.stack.kafka_cluster`). Each test ``kill -9``s one node at a
phase of an epoch - the leader of the pipeline's partition 0 during reserve and during the
write, the group coordinator's node during the commit, the active controller mid-write -
lets the epoch go on against the two nodes left, restarts the node, waits until every
partition's ISR holds all three replicas again, and asserts the exact end state: the topic's
records at their offsets, the ledger's epoch rows, the group's offsets, HBase's cells
(:meth:`Case.verify`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from tests.faults.harness import (
    OFFSETS_TOPIC,
    Case,
    FaultStack,
    hang_env,
    java_string_hash,
    new_case,
)
from tests.faults.kafka_brokers import (
    active_controller,
    kill_node,
    partition_leader,
    replicas,
    restart_node,
)
from tests.faults.test_service_faults import (
    _after_write,
    _drain_and_verify,
    _record_verified_end,
    _written_epoch,
)

ALL = [1, 2, 3]
HANG = "spark.task.after_segment:hang"


def _new_case(stack: FaultStack, tmp_path: Path, tag: str, **options: Any) -> Case:
    """A case whose topic is replicated on all three nodes, all in sync."""
    case = new_case(stack, tmp_path, tag, **options)
    for partition in range(case.partitions):
        assert replicas(stack, case.spec.topics[0], partition) == (ALL, ALL)
    return case


def _moved_leader(stack: FaultStack, topic: str, partition: int, old: str, timeout: float = 60) -> str:
    """The node leading ``topic``[``partition``] once it is no longer ``old`` (bounded wait: the
    controller fences a dead broker after its session timeout)."""
    deadline = time.monotonic() + timeout
    while (leader := partition_leader(stack, topic, partition)) == old:
        assert time.monotonic() < deadline, f"{topic}[{partition}] still led by {old} after {timeout:g} s"
        time.sleep(0.3)
    return leader


def _restart_whole(stack: FaultStack, case: Case, node: str) -> None:
    """Restart ``node``; every partition of the case's topic has its 3 replicas in sync again."""
    restart_node(stack, node)
    for partition in range(case.partitions):
        assert replicas(stack, case.spec.topics[0], partition) == (ALL, ALL)


def test_partition_leader_killed_during_reserve(
    cluster_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=33,
        fault="Kafka cluster (3 nodes, RF 3, min ISR 2): the leader of partition 0 kill -9 while reserve "
        "holds its transaction (watermarks read from that leader); the write reads from the new "
        "leader; the node restarted afterwards",
    )
    case = _new_case(cluster_stack, tmp_path, "kcres", records=200, cap=None)
    produced = case.produced_contents()
    leader = partition_leader(cluster_stack, case.spec.topics[0], 0)
    release = tmp_path / "release-reserve"
    reserve = case.start_step(
        "reserve", "run-r", faults="reserve.in_transaction:hang", extra_env=hang_env(120, release)
    )
    reserve.wait_for_output("EO fault point reserve.in_transaction: hanging")
    kill_node(cluster_stack, leader)
    release.touch()
    done = reserve.result(60)
    assert done.returncode == 0, done.output[-3000:]
    epoch_id = int(done.result["epoch_id"])
    epoch = case.epoch(epoch_id)
    assert epoch.state is EpochState.RESERVED
    assert {r.tp: (r.start, r.end) for r in epoch.ranges} == {tp: (0, end) for tp, end in case.ends().items()}
    new_leader = _moved_leader(cluster_stack, case.spec.topics[0], 0, leader)
    assert case.topic_contents() == produced  # every acknowledged record on the new leader
    proc = case.start_write(epoch_id)
    rc = proc.wait()
    assert rc == ExitCode.OK, proc.output()[-3000:]
    assert case.epoch(epoch_id).state is EpochState.WRITTEN
    _restart_whole(cluster_stack, case, leader)
    _after_write(case, epoch_id, rc)
    report["observed"] = (
        f"reserve exit 0 with epoch {epoch_id} over all 200 records (watermarks of the dead leader "
        f"{leader}); {new_leader} leads partition 0, serves every record at its offset; the write "
        f"exit 0 against 2 nodes; {leader} rejoined, ISR 3/3"
    )
    _drain_and_verify(case, cluster_stack, report, epoch_id, rc)
    assert case.topic_contents() == case.produced_contents()


def test_partition_leader_killed_during_write(
    cluster_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=34,
        fault="Kafka cluster (3 nodes): the leader of partition 0 kill -9 while the Spark tasks stand "
        "between two HBase segments (their range readers connected to it), restarted after the write",
    )
    case = _new_case(cluster_stack, tmp_path, "kcwrite", records=200, cap=None)
    leader = partition_leader(cluster_stack, case.spec.topics[0], 0)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    release = tmp_path / "release-write"
    proc = case.start_write(epoch_id, faults=HANG, **hang_env(240, release))
    proc.wait_for_hanging(case.partitions)
    kill_node(cluster_stack, leader)
    release.touch()
    rc = proc.wait()
    output = proc.output()
    assert rc in (ExitCode.OK, ExitCode.TASK_FAILED), output[-3000:]
    new_leader = _moved_leader(cluster_stack, case.spec.topics[0], 0, leader)
    _restart_whole(cluster_stack, case, leader)
    state = _after_write(case, epoch_id, rc)
    report["observed"] = (
        f"spark-submit exit {rc} "
        f"({'the range readers went on from the new leader ' + new_leader if rc == 0 else 'a task failed'}), "
        f"epoch {state.value}; {leader} rejoined, ISR 3/3"
    )
    _drain_and_verify(case, cluster_stack, report, epoch_id, rc)
    assert case.topic_contents() == case.produced_contents()


def _coordinator_node(stack: FaultStack, group: str) -> str:
    """The node leading the group's ``__consumer_offsets`` partition (its group coordinator)."""
    return partition_leader(stack, OFFSETS_TOPIC, _offsets_partition(group))


def _offsets_partition(group: str) -> int:
    """The group's ``__consumer_offsets`` partition (of the stack's 4: ``offsets.topic.num.partitions``)."""
    return (java_string_hash(group) & 0x7FFFFFFF) % 4


def _same_coordinator_group(group: str) -> str:
    """A group id of its own whose ``__consumer_offsets`` partition is ``group``'s (so one node is
    the group coordinator of both)."""
    partition = _offsets_partition(group)
    return next(
        f"{group}-twin-{i}" for i in range(1000) if _offsets_partition(f"{group}-twin-{i}") == partition
    )


def test_coordinator_killed_during_commit(
    cluster_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=35,
        fault="Kafka cluster (3 nodes): the node leading the __consumer_offsets partition of two "
        "pipelines' groups (their group coordinator) kill -9 (once) while commit stands (a) before "
        "publishing the offsets (released at the kill), (b) after publishing, before COMMITTED "
        "(released once the partition has a new leader); restarted after both",
    )
    a_case = _new_case(cluster_stack, tmp_path / "a", "kccommita", records=80, cap=80)
    group_a = a_case.spec.group_id
    b_case = _new_case(
        cluster_stack,
        tmp_path / "b",
        "kccommitb",
        records=80,
        cap=80,
        group_id=_same_coordinator_group(group_a),
    )
    group_b = b_case.spec.group_id
    hook = EoKafkaHook()
    a = _written_epoch(a_case, "run-a")
    b = _written_epoch(b_case, "run-b")
    ends_a, ends_b = a_case.epoch(a).end_offsets, b_case.epoch(b).end_offsets
    node = _coordinator_node(cluster_stack, group_a)
    assert _coordinator_node(cluster_stack, group_b) == node
    commit_a = a_case.start_commit_held(a, "run-a", "commit.before_publish", tmp_path / "release-a")
    commit_b = b_case.start_commit_held(b, "run-b", "commit.after_publish", tmp_path / "release-b")
    assert hook.committed_offsets(group_b, list(ends_b)) == ends_b

    kill_node(cluster_stack, node)
    (tmp_path / "release-a").touch()  # (a) publishes while its coordinator is dead
    _moved_leader(cluster_stack, OFFSETS_TOPIC, _offsets_partition(group_b), node)
    assert hook.committed_offsets(group_b, list(ends_b)) == ends_b  # replicated to the ISR before the ack
    (tmp_path / "release-b").touch()

    first = commit_a.result(90)
    assert first.returncode in (0, 1), first.output[-3000:]
    if first.returncode == 1:
        assert f"EoKafkaError: commit to group '{group_a}' of " in first.output, first.output[-3000:]
        assert a_case.epoch(a).state is EpochState.WRITTEN
        # a commit that timed out is ambiguous: its request may still have reached the new
        # coordinator. The group holds nothing or exactly the epoch's ends, never anything else;
        # the ledger (WRITTEN) is the truth and recovery publishes the same ends again
        assert hook.committed_offsets(group_a, list(ends_a)) in ({tp: None for tp in ends_a}, ends_a)
    else:
        assert a_case.epoch(a).state is EpochState.COMMITTED
        assert hook.committed_offsets(group_a, list(ends_a)) == ends_a
    done = commit_b.result(60)
    assert done.returncode == 0, done.output[-3000:]
    assert b_case.epoch(b).state is EpochState.COMMITTED
    _restart_whole(cluster_stack, a_case, node)
    for partition in range(b_case.partitions):
        assert replicas(cluster_stack, b_case.spec.topics[0], partition) == (ALL, ALL)
    recovered = a_case.recover("recover-a")["recommitted"]
    assert recovered == ([a] if first.returncode == 1 else [])
    assert a_case.epoch(a).state is EpochState.COMMITTED
    assert hook.committed_offsets(group_a, list(ends_a)) == ends_a
    observed = [
        f"(a) coordinator {node} killed before the publish: commit exit {first.returncode} "
        + (
            "(EoKafkaError), epoch WRITTEN, recover re-committed it"
            if first.returncode
            else "(new coordinator)"
        ),
        f"(b) the same coordinator killed after the publish: the new coordinator serves epoch {b}'s "
        "ends; commit exit 0, COMMITTED",
    ]
    report["observed"] = "; ".join(observed)
    recovered_parts, verified = [], []
    for part, case, epoch_id in (("a", a_case, a), ("b", b_case, b)):
        epochs = case.drain()
        assert [(e, s) for e, s, _ in case.epoch_rows()] == [(epoch_id, EpochState.COMMITTED)]
        assert case.group_offsets() == case.ends()
        assert case.topic_contents() == case.produced_contents()
        _record_verified_end(case, cluster_stack, report, recovery="")
        recovered_parts.append(f"({part}) {epochs} epoch(s) drained")
        verified.append(f"({part}) {report['verified']}")
    report["recovery"] = "direct: " + ", ".join(recovered_parts)
    report["verified"] = "; ".join(verified)


def _wait_new_controller(stack: FaultStack, old: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while (controller := active_controller(stack)) == old:
        assert time.monotonic() < deadline, f"no new active controller {timeout:g} s after {old} died"
        time.sleep(0.3)
    return controller


def test_active_controller_killed_during_write(
    cluster_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=36,
        fault="Kafka cluster (3 nodes): the active controller (the KRaft quorum's leader) kill -9 while "
        "the Spark tasks stand between two HBase segments; more records produced before its restart",
    )
    case = _new_case(cluster_stack, tmp_path, "kcctl", records=200, cap=None)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    release = tmp_path / "release-write"
    proc = case.start_write(epoch_id, faults=HANG, **hang_env(240, release))
    proc.wait_for_hanging(case.partitions)
    controller = active_controller(cluster_stack)
    kill_node(cluster_stack, controller)
    successor = _wait_new_controller(cluster_stack, controller)
    release.touch()
    rc = proc.wait()
    output = proc.output()
    assert rc in (ExitCode.OK, ExitCode.TASK_FAILED), output[-3000:]
    ends = case.ends()
    more = case.produce(40, seed=36)  # the cluster takes writes with 2 of 3 nodes
    first_new: dict[tuple[str, int], int] = {}
    for r in more:
        first_new[(r.topic, r.partition)] = min(first_new.get((r.topic, r.partition), r.offset), r.offset)
    assert first_new == {tp: ends[tp] for tp in first_new}  # appended right after the old ends
    _restart_whole(cluster_stack, case, controller)
    state = _after_write(case, epoch_id, rc)
    report["observed"] = (
        f"{successor} became the active controller; spark-submit exit {rc}, epoch {state.value}; "
        f"40 records produced with 2 nodes continue at the old ends; {controller} rejoined, ISR 3/3"
    )
    _drain_and_verify(case, cluster_stack, report, epoch_id, rc)
    assert case.topic_contents() == case.produced_contents()
