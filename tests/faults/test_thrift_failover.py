"""One of two HBase Thrift servers killed mid-epoch, for good: the write tasks carry on
through the other (long mode: an extra Thrift server JVM).

The suite's stack runs one Thrift server (``hbase-thrift``); this test starts a second
ThriftServer JVM on the same HBase (the stack's ``hbase-thrift-2`` instance, as
``eo-stack up --thrift-servers 2`` runs it: its own port, pid and log file in the stack's
state dir; cheaper than a second stack) and lists both in the ``eo_hbase`` connection
(``extra.servers``). Task ``i`` of the epoch starts on server ``i mod 2``; the second server
is killed with ``kill -9`` while both tasks stand after their first HBase segment and is
not restarted. The task that used it must fail over to the first server with one failed
call and write the rest there; the epoch must be written, committed, and exact.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from eo_devtools.stack.hbase import HBaseThriftService
from eo_devtools.stack.ports import LOOPBACK, find_free_port
from eo_devtools.stack.process import stop_process_group
from eo_devtools.stack.service import Service
from eo_devtools.stack.service_process import start_service, stop_service
from eo_devtools.stack.topology import Topology
from tests.faults.harness import Case, FaultStack, hang_env, new_case
from tests.faults.test_service_faults import HANG, _final_epochs, _record_verified_end

pytestmark = pytest.mark.long_faults


@pytest.fixture
def second_thrift(fault_stack: FaultStack) -> Iterator[Service]:
    """A running second Thrift server: the stack's ``hbase-thrift-2`` instance
    (:mod:`eo_devtools.stack.topology`), started beside the suite's one-server stack and
    stopped (if still alive) after the test."""
    cls = HBaseThriftService.configured(Topology(thrift_servers=2), 2)
    service = cls(fault_stack.local.state_dir, {cls.port_keys[0]: find_free_port()})
    start_service(service)
    try:
        yield service
    finally:
        stop_service(service)


@pytest.fixture
def two_servers(fault_stack: FaultStack, second_thrift: Service) -> Iterator[tuple[str, str]]:
    """The suite's ``eo_hbase`` connection listing both servers (the stack's first), for this
    test only; yields the two servers as ``host:port``."""
    first = f"{fault_stack.local.hbase_host}:{fault_stack.local.hbase_port}"
    second = f"{LOOPBACK}:{second_thrift.port}"
    previous = fault_stack.conn_env["AIRFLOW_CONN_EO_HBASE"]
    conn = json.loads(previous)
    conn["extra"] = {**conn.get("extra", {}), "servers": f"{first},{second}"}
    fault_stack.conn_env["AIRFLOW_CONN_EO_HBASE"] = json.dumps(conn)
    try:
        yield first, second
    finally:
        fault_stack.conn_env["AIRFLOW_CONN_EO_HBASE"] = previous


def _by_partition(case: Case) -> dict[int, list[tuple[int, bytes | None, bytes | None]]]:
    return {partition: rows for (_topic, partition), rows in case.produced_contents().items()}


def test_thrift_server_kill9_mid_write_tasks_fail_over(
    fault_stack: FaultStack,
    second_thrift: Service,
    two_servers: tuple[str, str],
    tmp_path: Path,
    report: dict[str, Any],
) -> None:
    report.update(
        order=32,
        fault="one of two HBase Thrift server JVMs kill -9 while the Spark tasks (one per server) stand "
        "between two HBase segments; not restarted",
    )
    first, second = two_servers
    case = new_case(fault_stack, tmp_path / "faulted", "thrfo", records=200, cap=None)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    release = tmp_path / "release"
    proc = case.start_write(epoch_id, faults=HANG, **hang_env(240, release))
    proc.wait_for_hanging(case.partitions)
    assert case.hbase_cells(), "the tasks had written their first segments"
    stop_process_group(int(second_thrift.pid_path.read_text()), first_signal=signal.SIGKILL, grace_s=5.0)
    assert not second_thrift.healthy()
    killed_at = time.monotonic()
    release.touch()
    rc, output = proc.wait(), proc.output()
    finished_s = round(time.monotonic() - killed_at, 1)

    assert rc == ExitCode.OK, output[-3000:]
    # The task on the killed server failed one call and wrote the same segment through the
    # other server; the other task never failed.
    assert output.count("HBase write failed") == 1, output[-3000:]
    assert output.count(f"attempt=1/4 failover={second}->{first}: ") == 1, output[-3000:]
    assert case.epoch(epoch_id).state is EpochState.WRITTEN
    case.commit(epoch_id, "fault-run")
    assert case.epoch(epoch_id).state is EpochState.COMMITTED
    assert case.group_offsets() == case.ends()

    # Exact cells AND versions: those of the same records written without a fault.
    control = new_case(fault_stack, tmp_path / "control", "thrfoc", records=200, cap=None)
    assert _by_partition(control) == _by_partition(case)  # the same records at the same offsets
    assert control.run_epoch("control-run") is not None
    cells = case.hbase_cells()
    assert cells == control.hbase_cells()

    # A later epoch with the server still dead: its task 1 starts there and fails over at once.
    case.produce(40, seed=45)
    later = int(case.reserve("later-run")["epoch_id"])  # type: ignore[index]
    proc = case.start_write(later)
    rc_later, output = proc.wait(), proc.output()
    assert rc_later == ExitCode.OK, output[-3000:]
    assert output.count("HBase write failed") == 1, output[-3000:]
    assert output.count(f"attempt=1/4 failover={second}->{first}: ") == 1, output[-3000:]
    case.commit(later, "later-run")
    epochs = 1 + case.drain()
    assert epochs == 1
    _final_epochs(case, epoch_id, rc)
    report["observed"] = (
        f"spark-submit exit 0: the task on the killed server failed one call (attempt 1/4, failover "
        f"to the other server) and wrote the same segment there, the other task never failed; the "
        f"write ended {finished_s} s after the kill; epoch WRITTEN, committed; {len(cells)} rows, "
        "cells and versions identical to a fault-free write of the same records"
    )
    _record_verified_end(
        case,
        fault_stack,
        report,
        recovery=f"none needed: epoch {epoch_id} committed; {epochs} more epoch written with the server "
        "still dead (its task on that server failed over on its first call)",
    )
