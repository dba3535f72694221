"""Fixtures and helpers shared by the operator tests (real ledger and broker).

Operators are driven through ``execute(context)`` with the part of the Airflow context
they read: ``context["ti"]`` with ``dag_id``/``run_id`` (and ``get_dr_count`` for the
recovery liveness check), ``context["params"]`` for backfills. Test modules import the
``*_fixture`` functions; pytest registers them under their ``name``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.recover import RecoverEpochsOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from tests.kafka_helpers import produce
from tests.task_context import task_context


@pytest.fixture(autouse=True, name="conn_env")
def conn_env_fixture(stack, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(name="ledger")
def ledger_fixture(stack) -> Iterator[Ledger]:
    with Ledger(stack.ledger_dsn) as led:
        yield led


@pytest.fixture(name="kafka")
def kafka_fixture(ledger: Ledger) -> EoKafkaHook:
    return EoKafkaHook()


@pytest.fixture(name="pipeline")
def pipeline_fixture(tmp_path: Path) -> Callable[..., tuple[str, str, str]]:
    """``make(topics=[...] | topic_pattern=..., **options) -> (name, group, pipelines_file)``."""

    def make(**options: Any) -> tuple[str, str, str]:
        name = f"p_{uuid.uuid4().hex[:10]}"
        group = f"g-{name}"
        entry = {"name": name, "group_id": group, "hbase": {"table": name}, **options}
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"pipelines": [entry]}))
        return name, group, str(path)

    return make


def reserve(name: str, file: str, run_id: str = "run-1") -> dict[str, Any]:
    op = ReserveEpochOperator(task_id="reserve", pipeline=name, pipelines_file=file)
    return op.execute(task_context(run_id))  # type: ignore[arg-type]


def commit(name: str, file: str, epoch_id: int | str) -> dict[str, Any]:
    op = CommitEpochOperator(task_id="commit", pipeline=name, epoch_id=epoch_id, pipelines_file=file)
    return op.execute(task_context())  # type: ignore[arg-type]


def recover(name: str, file: str, run_id: str, kind: str | None = "stream", **extra: Any) -> dict[str, Any]:
    op = RecoverEpochsOperator(task_id="recover", pipeline=name, kind=kind, pipelines_file=file)
    return op.execute(task_context(run_id, **extra))  # type: ignore[arg-type]


def fill(stack, topic: str, counts: list[int]) -> None:
    for partition, count in enumerate(counts):
        if count:
            produce(
                stack.kafka_bootstrap, topic, [(f"k{i}", f"v{i}") for i in range(count)], partition=partition
            )


def ranges(summary: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    return [(r["topic"], r["partition"], r["start"], r["end"]) for r in summary["ranges"]]


def vote(ledger: Ledger, summary: dict[str, Any]) -> None:
    ledger.vote_written(summary["epoch_id"], summary["fencing_token"], {"records": summary["records_total"]})
