"""The write step's start-up defaults through a real spark-submit: a pipeline that sets no Spark
conf gets its driver's class-data archive recorded by its first epoch and mapped by the next."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import happybase
import pytest
import yaml

from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.ledger import EpochState, Ledger
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.driver_class_archive import DriverClassArchive
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from airflow_provider_eo.operators.write import WriteEpochOperator
from tests.conftest import StackInfo
from tests.kafka_helpers import created_topic, produce
from tests.task_context import task_context

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def one_epoch(name: str, pipelines_file: Path, value: bytes, topic: str, stack: StackInfo) -> int:
    """Produce one record; reserve, write and commit its epoch with the operators (a run of
    its own); the epoch id."""
    produce(stack.kafka_bootstrap, topic, [("k", value)], partition=0)
    context = task_context(run_id=uuid.uuid4().hex)
    common = {"pipeline": name, "pipelines_file": str(pipelines_file)}
    summary = ReserveEpochOperator(task_id="reserve", **common).execute(context)  # type: ignore[arg-type]
    spec = load_pipeline(name, pipelines_file)
    epoch_id, token = summary["epoch_id"], summary["fencing_token"]
    write = WriteEpochOperator(task_id="write", epoch_id=epoch_id, fencing_token=token, spec=spec, **common)
    write.execute(context)
    commit = CommitEpochOperator(task_id="commit", epoch_id=epoch_id, **common)
    commit.execute(context)  # type: ignore[arg-type]
    return int(summary["epoch_id"])


def test_the_first_epoch_records_the_archive_and_the_next_one_maps_it(
    stack: StackInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for variable, value in stack.conn_env.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    archives = tmp_path / "archives"
    monkeypatch.setenv("AIRFLOW__EO__SPARK_CLASS_ARCHIVE_DIR", str(archives))
    name = f"cds_{uuid.uuid4().hex[:8]}"
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(name, {"d": {"max_versions": 1}})
    try:
        with created_topic(stack.kafka_bootstrap, partitions=1, prefix="cds") as topic:
            pipelines_file = tmp_path / "pipelines.yaml"
            entry = {"name": name, "topics": [topic], "hbase": {"table": name}}  # no spark conf at all
            pipelines_file.write_text(yaml.safe_dump({"pipelines": [entry]}))
            first = one_epoch(name, pipelines_file, b'{"v": 1}', topic, stack)
            first_output = capfd.readouterr().out
            archive = DriverClassArchive.for_installation(archives).path
            assert sorted(p.name for p in archives.iterdir()) == [archive.name]  # no partial file left
            second = one_epoch(name, pipelines_file, b'{"v": 2}', topic, stack)
            second_output = capfd.readouterr().out
            hbase.close()
            hbase.open()
            cells = dict(hbase.table(name).scan(include_timestamp=True))
    finally:
        hbase.delete_table(name, disable=True)
        hbase.close()
    assert f"-XX:ArchiveClassesAtExit={archives}/{archive.name}." in first_output
    assert f"epoch_id={first}: driver up class_archive=none" in first_output
    assert f"-XX:SharedArchiveFile={archive}" in second_output
    assert f"epoch_id={second}: driver up class_archive={archive}" in second_output  # the JVM mapped it
    assert cells == {b"k": {b"d:v": (b"2", 1)}}
    with Ledger(stack.ledger_dsn) as ledger:
        assert [ledger.get_epoch(e).state for e in (first, second)] == [EpochState.COMMITTED] * 2
