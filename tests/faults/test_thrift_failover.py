"""One of two HBase Thrift servers killed mid-epoch: the write tasks carry on through the other.

The suite's ``cluster_stack`` (tests/faults/cluster_topology.py) runs two Thrift servers on
the same HBase (``hbase-thrift`` and ``hbase-thrift-2``, as ``eo-stack up --thrift-servers 2``
runs them) and lists both in the ``eo_hbase`` connection (``extra.servers``). Task ``i`` of
the epoch starts on server ``i mod 2``; the second server is killed with ``kill -9`` while both
tasks stand after their first HBase segment and stays dead for a later epoch too. The task
that used it must fail over to the first server with one failed call and write the rest
there; the epochs must be written, committed, and exact. The server is restarted at the end,
so the cluster is whole for the next case.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from tests.faults.harness import Case, FaultStack, hang_env, new_case
from tests.faults.test_service_faults import HANG, _final_epochs, _record_verified_end

SECOND = "hbase-thrift-2"


def _servers(stack: FaultStack) -> tuple[str, str]:
    """The two Thrift servers of the stack's ``eo_hbase`` connection, as ``host:port``."""
    conn = json.loads(stack.conn_env["AIRFLOW_CONN_EO_HBASE"])
    first, second = str(conn["extra"]["servers"]).split(",")
    assert first == f"{stack.local.hbase_host}:{stack.local.hbase_port}", (first, second)
    return first, second


def _by_partition(case: Case) -> dict[int, list[tuple[int, bytes | None, bytes | None]]]:
    return {partition: rows for (_topic, partition), rows in case.produced_contents().items()}


def test_thrift_server_kill9_mid_write_tasks_fail_over(
    cluster_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=32,
        fault="one of two HBase Thrift server JVMs kill -9 while the Spark tasks (one per server) stand "
        "between two HBase segments; still dead for the next epoch, restarted at the end",
    )
    first, second = _servers(cluster_stack)
    case = new_case(cluster_stack, tmp_path / "faulted", "thrfo", records=200, cap=None)
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    release = tmp_path / "release"
    proc = case.start_write(epoch_id, faults=HANG, **hang_env(240, release))
    proc.wait_for_hanging(case.partitions)
    assert case.hbase_cells(), "the tasks had written their first segments"
    cluster_stack.kill(SECOND)
    assert not cluster_stack.healthy()
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
    control = new_case(cluster_stack, tmp_path / "control", "thrfoc", records=200, cap=None)
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
    cluster_stack.restart(SECOND)
    report["observed"] = (
        f"spark-submit exit 0: the task on the killed server failed one call (attempt 1/4, failover "
        f"to the other server) and wrote the same segment there, the other task never failed; the "
        f"write ended {finished_s} s after the kill; epoch WRITTEN, committed; {len(cells)} rows, "
        "cells and versions identical to a fault-free write of the same records"
    )
    _record_verified_end(
        case,
        cluster_stack,
        report,
        recovery=f"none needed: epoch {epoch_id} committed; {epochs} more epoch written with the server "
        "still dead (its task on that server failed over on its first call)",
    )
