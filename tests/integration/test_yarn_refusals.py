"""Bad YARN settings refused by the write step before spark-submit, against the real RM.

One reserved stream epoch (2 x 10 records) serves every case. Each case's write fails with
an error naming the connection and the cause, and changes nothing: the epoch is RESERVED
under the same token with no transition besides its reservation, the HBase table is empty,
the group has no offsets, and the RM has no application tagged with the pipeline (the
checks are REST calls; no YARN application is started). A backfill chunk with an unknown
queue reserves nothing at all.
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import happybase
import pytest

from airflow_provider_eo.clients.yarn_resource_manager import ResourceManagerUnavailable
from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochState, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.operators.backfill_chunks import WriteBackfillChunkOperator
from airflow_provider_eo.operators.write import WriteEpochOperator
from tests.conftest import StackInfo
from tests.integration.operator_support import reserve
from tests.integration.yarn_write_support import (  # noqa: F401 (fixtures)
    YarnRecords,
    cluster_spark,
    use_yarn_environment,
    write_pipelines,
    yarn_records_fixture,
)
from tests.kafka_helpers import created_topic, produce
from tests.task_context import task_context

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def reserved(
    stack: StackInfo, yarn_records: YarnRecords, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """A pipeline on the stack's YARN (cluster deploy mode) with one reserved epoch."""
    name = f"yarn_bad_{uuid.uuid4().hex[:8]}"
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(name, {"d": {}})
    hbase.close()
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_yarn_environment(monkeypatch, stack, stack.conn_env)
        with created_topic(stack.kafka_bootstrap, partitions=2, prefix="yarnbad") as topic:
            for p in range(2):
                produce(stack.kafka_bootstrap, topic, [(f"k{i}", '{"n": 1}') for i in range(10)], partition=p)
            spark = cluster_spark(stack.state_dir, package="zip", python="/usr/bin/python3")
            entry = {"name": name, "group_id": f"g-{name}", "topics": [topic], "hbase": {"table": name}}
            file = write_pipelines(tmp_path_factory.mktemp("bad") / "p.yaml", {**entry, "spark": spark})
            summary = reserve(name, file)
            yield {"name": name, "topic": topic, "file": file, "summary": summary}
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.delete_table(name, disable=True)
    hbase.close()


def spark_connection(monkeypatch: pytest.MonkeyPatch, yarn_records: YarnRecords, **extra: Any) -> str:
    """``spark_bad``: the stack's YARN connection with ``extra`` merged (None values removed)."""
    base = {
        "deploy-mode": "cluster",
        "queue": "default",
        "yarn_resourcemanager_webapp_address": yarn_records.url,
    }
    merged = {k: v for k, v in {**base, **extra}.items() if v is not None}
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_BAD", json.dumps({"conn_type": "spark", "host": "yarn", "extra": merged})
    )
    return "spark_bad"


def assert_nothing_changed(stack: StackInfo, yarn_records: YarnRecords, reserved: dict[str, Any]) -> None:
    name, topic, summary = reserved["name"], reserved["topic"], reserved["summary"]
    with Ledger(stack.ledger_dsn) as ledger:
        epoch = ledger.get_epoch(summary["epoch_id"])
        history = ledger.history(summary["epoch_id"])
        epochs = ledger.epochs(EpochFilter(pipeline=name))
    assert (epoch.state, str(epoch.fencing_token), [(t.from_state, t.to_state) for t in history]) == (
        EpochState.RESERVED, summary["fencing_token"], [(None, "RESERVED")]
    )  # fmt: skip
    assert [e.epoch_id for e in epochs] == [summary["epoch_id"]]
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        assert list(hbase.table(name).scan()) == []
    finally:
        hbase.close()
    offsets = EoKafkaHook().committed_offsets(f"g-{name}", [(topic, 0), (topic, 1)])
    assert offsets == {(topic, 0): None, (topic, 1): None}
    assert yarn_records.apps_tagged(f"eo-pipeline-{name}") == []


CASES = {
    "rm_not_answering": (
        {"yarn_resourcemanager_webapp_address": "http://127.0.0.1:{port}"},
        {},
        ResourceManagerUnavailable,
        r"YARN ResourceManager http://127\.0\.0\.1:\d+ \(Spark connection 'spark_bad'\) did not answer "
        r"GET /ws/v1/cluster/scheduler: ConnectionError",
    ),
    "no_rm_address": (
        {"yarn_resourcemanager_webapp_address": None},
        {},
        ConfigError,
        r"YARN cluster deploy mode: .* set yarn_resourcemanager_webapp_address \(e\.g\. http://rm:8088\) in "
        r"the extra of Spark connection 'spark_bad'",
    ),
    "unknown_queue": (
        {"queue": "nightly"},
        {},
        ConfigError,
        r"YARN queue 'nightly' \(ResourceManager http://127\.0\.0\.1:\d+, Spark connection 'spark_bad'\): "
        r"the scheduler has no such queue \(leaf queues: root\.default\)",
    ),
    "memory_above_maximum_allocation": (
        {},
        {"conf": {"spark.driver.memory": "4g"}},
        ConfigError,
        r"the driver's container needs 4352 MB \(4096 MB \+ overhead 256 MB\), more than the queue's "
        r"maximum allocation of 4096 MB \(yarn\.scheduler\.maximum-allocation-mb\); YARN would refuse the "
        r"application",
    ),
    "missing_py_files_zip": (
        {},
        {"py_files": "/nonexistent/eo-extra.zip"},
        ConfigError,
        r"--py-files entry '/nonexistent/eo-extra\.zip' \(from py_files\) does not exist on this machine",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_yarn_setting_is_refused_before_spark_submit_and_changes_nothing(
    stack: StackInfo,
    yarn_records: YarnRecords,
    reserved: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    extra, operator_settings, error, message = CASES[case]
    extra = {k: v.format(port=free_port()) if isinstance(v, str) else v for k, v in extra.items()}
    use_yarn_environment(monkeypatch, stack, stack.conn_env)
    spec = load_pipeline(reserved["name"], reserved["file"])
    settings = dict(operator_settings)
    conf = {**spec.spark.conf, **settings.pop("conf", {})}
    spec = dataclasses.replace(spec, spark=dataclasses.replace(spec.spark, conf=conf))
    write = WriteEpochOperator(
        task_id="write",
        pipeline=reserved["name"],
        epoch_id=reserved["summary"]["epoch_id"],
        fencing_token=reserved["summary"]["fencing_token"],
        spec=spec,
        spark_conn_id=spark_connection(monkeypatch, yarn_records, **extra),
        **settings,
    )
    with pytest.raises(error) as info:
        write.execute(task_context())
    assert str(info.value).startswith(f"pipeline {reserved['name']}: ")
    assert re.search(message, str(info.value)), str(info.value)
    assert_nothing_changed(stack, yarn_records, reserved)


def test_a_backfill_chunk_with_an_unknown_queue_reserves_nothing(
    stack: StackInfo, yarn_records: YarnRecords, reserved: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_yarn_environment(monkeypatch, stack, stack.conn_env)
    name, topic = reserved["name"], reserved["topic"]
    chunk = WriteBackfillChunkOperator(
        task_id="chunk.write",
        pipeline=name,
        ranges=[{"topic": topic, "partition": 0, "start": 0, "end": 5}],
        spec=load_pipeline(name, reserved["file"]),
        spark_conn_id=spark_connection(monkeypatch, yarn_records, queue="nightly"),
    )
    with pytest.raises(ConfigError, match="the scheduler has no such queue"):
        chunk.execute(task_context("bf-1", dag_id="eo_backfill"))
    assert_nothing_changed(stack, yarn_records, reserved)  # no backfill epoch beside the stream one


def test_the_queue_named_by_its_path_passes_the_checks(yarn_records: YarnRecords) -> None:
    """The other side of the refusals: ``root.default`` and ``default`` both name the leaf."""
    from airflow_provider_eo.clients.yarn_resource_manager import ResourceManager
    from airflow_provider_eo.operators.yarn_containers import driver_container, executor_container
    from airflow_provider_eo.operators.yarn_preflight import check_yarn_submission

    rm = ResourceManager(yarn_records.url, where="the stack")
    sized = {"spark.driver.memory": "3g", "spark.executor.memory": "512m"}
    containers = [driver_container(sized, "cluster"), executor_container(sized)]
    for queue in ("root.default", "default"):
        found = check_yarn_submission(pipeline="p", rm=rm, queue=queue, containers=containers)
        assert (found.path, found.leaf, found.maximum_memory_mb, found.maximum_vcores) == (
            "root.default", True, 4096, 2
        )  # fmt: skip


def test_a_missing_credential_file_is_refused_before_spark_submit_and_changes_nothing(
    stack: StackInfo,
    yarn_records: YarnRecords,
    reserved: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    """A connection naming a keytab that is not on this machine: refused with the connection,
    the key and the path before anything is submitted (any master: local mode reads it in place)."""
    use_yarn_environment(monkeypatch, stack, stack.conn_env)
    hbase = json.loads(stack.conn_env["AIRFLOW_CONN_EO_HBASE"])
    keytab = tmp_path / "eo-writer.keytab"  # never created
    kerberos = {"auth": "kerberos", "kerberos_principal": "eo-writer@EO.TEST", "kerberos_keytab": str(keytab)}
    hbase["extra"] = {**hbase.get("extra", {}), **kerberos}
    monkeypatch.setenv("AIRFLOW_CONN_EO_HBASE", json.dumps(hbase))
    write = WriteEpochOperator(
        task_id="write",
        pipeline=reserved["name"],
        epoch_id=reserved["summary"]["epoch_id"],
        fencing_token=reserved["summary"]["fencing_token"],
        spec=load_pipeline(reserved["name"], reserved["file"]),
        spark_conn_id=spark_connection(monkeypatch, yarn_records),
    )
    with pytest.raises(ConfigError) as info:
        write.execute(task_context())
    assert str(info.value) == (
        f"pipeline {reserved['name']}: connection 'eo_hbase': extra.kerberos_keytab = '{keytab}': "
        "no such file; nothing was submitted"
    )
    assert_nothing_changed(stack, yarn_records, reserved)
