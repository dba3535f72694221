"""HBase regions changing under a write: a split and a move while the Spark tasks stand between
two HBase segments, and a table pre-split into many regions written by many tasks.

These run on the suite's shared cluster stack, whose HBase master JVM holds two region
servers (``cluster_stack``: tests/faults/cluster_topology.py, docs/scale.md). The regions are
changed through HBase's Java Admin API (:class:`~eo_devtools.stack.hbase_admin.HBaseTableTool`),
each change waited for until the regions are open again. Each case asserts the exact end
state: HBase cells and their versions, the ledger's epoch rows and the group's offsets
(:meth:`Case.verify`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from eo_devtools.stack.hbase_admin import Region
from tests.faults.harness import Case, FaultStack, new_case
from tests.faults.test_service_faults import (
    _after_write,
    _final_epochs,
    _hold_tasks_then,
    _record_verified_end,
)

#: Where the sample events' rows (``user-0000`` .. ``user-0039``) are cut in two.
MIDDLE = "user-0020"
#: 15 keys: 16 regions of about 2-3 sample users each.
SIXTEEN_REGIONS = [f"user-{i * 40 // 16:04d}" for i in range(1, 16)]
#: What a segment write that failed and was retried logs (spark/hbase_sink/hbase_writer.py).
RETRY_LOG = "HBase write failed"


def _bounds(regions: list[Region]) -> list[tuple[str, str]]:
    return [(r.start, r.end) for r in regions]


def _finish(
    case: Case, stack: FaultStack, report: dict[str, Any], epoch_id: int, rc: int, output: str
) -> None:
    """The write went through (exit 0, epoch WRITTEN, re-committed by recover); drain, check
    the epoch rows and group offsets, verify the exact cells; record the retries seen."""
    assert rc == ExitCode.OK, output[-3000:]
    assert _after_write(case, epoch_id, rc) is EpochState.WRITTEN
    epochs = case.drain()
    _final_epochs(case, epoch_id, rc)
    retries = output.count(RETRY_LOG)
    report["observed"] += f"; spark-submit exit 0, {retries} segment write(s) retried; epoch WRITTEN"
    _record_verified_end(
        case,
        stack,
        report,
        recovery=f"direct: recover re-committed epoch {epoch_id}; {epochs} epoch(s) drained",
    )


def test_region_split_mid_write(cluster_stack: FaultStack, tmp_path: Path, report: dict[str, Any]) -> None:
    report.update(
        order=37,
        fault="HBase region split (2 region servers) while the Spark tasks stand between two HBase "
        "segments: the table's only region split at its middle row, daughters open, tasks released",
    )
    case = new_case(cluster_stack, tmp_path, "rsplit", records=200, cap=None)
    tool = cluster_stack.table_tool
    table = case.spec.hbase_table
    assert _bounds(tool.regions(table)) == [("", "")]
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    seen: dict[str, Any] = {}

    def split() -> None:
        seen["before"] = case.hbase_cells()
        seen["daughters"] = tool.split(table, MIDDLE)
        seen["regions"] = tool.regions(table)
        seen["after"] = case.hbase_cells()

    rc, output = _hold_tasks_then(case, tmp_path, epoch_id, split)
    assert seen["before"] and seen["after"] == seen["before"]  # a split moves no cell
    assert _bounds(seen["regions"]) == [("", MIDDLE), (MIDDLE, "")]
    assert sorted(r.name for r in seen["regions"]) == sorted(seen["daughters"])
    report["observed"] = (
        f"split at {MIDDLE} into 2 daughters on {len({r.server for r in seen['regions']})} server(s) "
        f"with {len(seen['before'])} rows written; cells unchanged by the split"
    )
    _finish(case, cluster_stack, report, epoch_id, rc, output)


def test_region_move_mid_write(cluster_stack: FaultStack, tmp_path: Path, report: dict[str, Any]) -> None:
    report.update(
        order=38,
        fault="HBase region moves (2 region servers) while the Spark tasks stand between two HBase "
        "segments: each region of a table pre-split in 2 moved to the other server, tasks released",
    )
    case = new_case(cluster_stack, tmp_path, "rmove", records=200, cap=None, split_keys=[MIDDLE])
    tool = cluster_stack.table_tool
    table = case.spec.hbase_table
    servers = tool.servers()
    assert len(servers) == 2
    before = tool.regions(table)
    assert _bounds(before) == [("", MIDDLE), (MIDDLE, "")]
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    seen: dict[str, Any] = {}

    def move() -> None:
        seen["before"] = case.hbase_cells()
        seen["targets"] = {}
        for region in before:
            target = next(s for s in servers if s != region.server)
            assert tool.move(table, region.name, target) == target
            seen["targets"][region.name] = target
        seen["after"] = case.hbase_cells()

    rc, output = _hold_tasks_then(case, tmp_path, epoch_id, move)
    assert seen["before"] and seen["after"] == seen["before"]  # a move changes no cell
    report["observed"] = (
        f"both regions moved to the other region server with {len(seen['before'])} rows written; "
        "cells unchanged by the moves"
    )
    _finish(case, cluster_stack, report, epoch_id, rc, output)
    # The regions kept their bounds (the balancer may have moved them again since).
    assert _bounds(tool.regions(table)) == _bounds(before)


def test_many_regions_many_tasks(cluster_stack: FaultStack, tmp_path: Path, report: dict[str, Any]) -> None:
    report.update(
        order=39,
        fault="a table pre-split into 16 regions over 2 region servers, written by 8 Spark tasks "
        "(8 partitions) in one epoch",
    )
    case = new_case(
        cluster_stack, tmp_path, "rmany", partitions=8, records=800, cap=None, split_keys=SIXTEEN_REGIONS
    )
    tool = cluster_stack.table_tool
    table = case.spec.hbase_table
    regions = tool.regions(table)
    assert len(regions) == 16
    assert [r.end for r in regions[:-1]] == SIXTEEN_REGIONS
    hosts = {r.server for r in regions}
    assert hosts == set(tool.servers()), regions  # spread over both region servers
    epoch_id = int(case.reserve("fault-run")["epoch_id"])  # type: ignore[index]
    assert len(case.epoch(epoch_id).ranges) == 8
    proc = case.start_write(epoch_id)
    rc = proc.wait()
    output = proc.output()
    per_server = {server: sum(r.server == server for r in regions) for server in sorted(hosts)}
    report["observed"] = (
        f"16 regions, {sorted(per_server.values())} per region server; 8 tasks (one per partition) "
        f"wrote {len(case.hbase_cells())} rows across them"
    )
    _finish(case, cluster_stack, report, epoch_id, rc, output)
