"""The fault suite runs its cluster cases last, so its two private stacks never run at once.

No service: the collected items are stand-ins with a path and fixture names, as pytest's
items have them (tests/faults/cluster_topology.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.faults.cluster_topology import FAULTS_DIR, cluster_cases_last


@dataclass
class _Item:
    nodeid: str
    fixturenames: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return FAULTS_DIR.parent.parent / self.nodeid.split("::")[0]


def _order(items: list[Any]) -> list[str]:
    cluster_cases_last(items)
    return [item.nodeid for item in items]


def test_cluster_cases_move_behind_the_other_fault_cases_and_nothing_else_moves() -> None:
    items = [
        _Item("tests/airflow/test_a.py::t", ["stack"]),
        _Item("tests/faults/test_hbase_regions.py::split", ["cluster_stack"]),
        _Item("tests/faults/test_inputs.py::bad", ["fault_stack"]),
        _Item("tests/faults/test_kafka_cluster.py::leader", ["cluster_stack", "report"]),
        _Item("tests/faults/test_service_faults.py::kill", ["fault_stack"]),
        _Item("tests/integration/test_b.py::t", ["cluster_stack"]),  # not a fault case: stays
    ]
    assert _order(items) == [
        "tests/airflow/test_a.py::t",
        "tests/faults/test_inputs.py::bad",
        "tests/faults/test_service_faults.py::kill",
        "tests/faults/test_hbase_regions.py::split",
        "tests/faults/test_kafka_cluster.py::leader",
        "tests/integration/test_b.py::t",
    ]


def test_a_case_asking_for_both_stacks_is_refused_by_name() -> None:
    items: list[Any] = [_Item("tests/faults/test_x.py::both", ["fault_stack", "cluster_stack"])]
    with pytest.raises(
        pytest.UsageError, match=r"test_x.py::both: asks for both cluster_stack and fault_stack"
    ):
        cluster_cases_last(items)
