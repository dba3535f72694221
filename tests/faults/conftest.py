"""Fixtures of the fault suite: its private local stacks, Airflow, and the report rows.

The suite runs its own LocalStack (it kills and restarts PostgreSQL, Kafka, the HBase
master and HBase's Thrift server, and stalls the broker), so other suites' ``stack`` is
never disturbed: ``fault_stack`` (one node of each) for most cases, then ``cluster_stack``
(tests/faults/cluster_topology.py) for the cases that need a cluster, run last.
Each test fills a ``report`` row; at session end the rows regenerate RELIABILITY.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eo_devtools.demo.airflow_runner import AirflowRunner
from tests.airflow_metadata_template import migrated_sqlite_home
from tests.faults import reliability, reliability_provenance
from tests.faults.cluster_topology import (
    CLUSTER_STACK_DIR_ENV,
    CLUSTER_TOPOLOGY,
    cluster_cases_last,
    restore_whole,
    retire,
)
from tests.faults.harness import FAULT_STACK_DIR_ENV, FaultStack, running_fault_stack
from tests.faults.topology_faults import topology_from_env

_ROWS: list[dict[str, Any]] = []
_RANDOM_RUNS: list[dict[str, Any]] = []
#: The single-node stacks this session started (stopped once the cluster stack starts).
_SINGLE_NODE: list[FaultStack] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    cluster_cases_last(items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()  # type: ignore[attr-defined]
    if rep.when == "call":
        item.stash[_CALL_KEY] = rep.passed


_CALL_KEY = pytest.StashKey[bool]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reliability.write(_ROWS, _RANDOM_RUNS)


@pytest.fixture(scope="package")
def fault_stack() -> Iterator[FaultStack]:
    """The suite's stack (``EO_FAULT_TOPOLOGY``: tests/faults/topology_faults.py), stopped once the
    last test of ``tests/faults`` is done: its JVMs then no longer share the 2 cores and the
    memory with the suites that run after it."""
    with running_fault_stack("eo-faults-", topology_from_env()) as stack:
        if not os.environ.get(FAULT_STACK_DIR_ENV):
            _SINGLE_NODE.append(stack)
        yield stack


@pytest.fixture(scope="package")
def cluster_stack() -> Iterator[FaultStack]:
    """The suite's cluster-topology stack (3 Kafka nodes, 2 region servers, 2 Thrift servers),
    shared by every case that asks for it; those run after all the others, and the single-node
    stack is stopped first (tests/faults/cluster_topology.py)."""
    retire(_SINGLE_NODE)
    with running_fault_stack("eo-cluster-", CLUSTER_TOPOLOGY, CLUSTER_STACK_DIR_ENV) as stack:
        yield stack


@pytest.fixture(autouse=True)
def _whole_cluster_after(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a cluster case, the cluster is whole again even when the case failed before its
    own restart: a node or server it left down is started, and every partition's ISR is full
    (so one failure does not fail the cases after it)."""
    yield
    if "cluster_stack" in request.fixturenames:
        restore_whole(request.getfixturevalue("cluster_stack"))


@pytest.fixture(scope="package")
def airflow(fault_stack: FaultStack, tmp_path_factory: pytest.TempPathFactory) -> AirflowRunner:
    """A migrated Airflow home; ``runner_for(case)`` binds a case's pipelines file."""
    home = tmp_path_factory.mktemp("airflow-home")
    migrated_sqlite_home(home)  # a copy of the session's migrated airflow.db
    return AirflowRunner(home, fault_stack.conn_env)


def runner_for(airflow: AirflowRunner, fault_stack: FaultStack, pipelines_file: Path) -> AirflowRunner:
    """The session's Airflow home, running the DAGs of ``pipelines_file``."""
    return AirflowRunner(airflow.home, fault_stack.conn_env, pipelines_file=pipelines_file)


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """The test's RELIABILITY.md row: set ``order``, ``fault``, ``observed``, ``recovery``, ``verified``;
    the outcome, commit, date and mode are added when the test ends."""
    row: dict[str, Any] = {"id": request.node.name}
    yield row
    if "fault" not in row:
        return
    passed = request.node.stash.get(_CALL_KEY, False)
    row["outcome"] = "pass" if passed else "FAIL"
    row.update(reliability_provenance.run_stamp())  # commit, dirty, date, mode
    _ROWS.append(row)


@pytest.fixture
def random_runs() -> list[dict[str, Any]]:
    """Where the randomized test records its run summary."""
    return _RANDOM_RUNS
