"""WriteEpochOperator's hand-over of settings to Spark: never on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_eo.config import parse_pipelines_text
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.operators.submission_files import check_local_files, local_paths
from airflow_provider_eo.operators.write import WriteEpochOperator, spark_application_path
from airflow_provider_eo.operators.write_submission import (
    WriteSubmission,
    application_args,
    check_deploy_mode,
    write_submission,
)

SPEC = parse_pipelines_text(
    "pipelines:\n  - name: p\n    topics: [t]\n    hbase: {table: t}\n"
    "    spark: {deploy_mode: cluster, conf: {spark.executor.instances: 3}}\n",
    "inline.yaml",
)["p"]


def test_application_arguments_are_names_and_ids_only() -> None:
    op = WriteEpochOperator(task_id="write", pipeline="p", epoch_id="{{ x }}", spec=SPEC)
    assert op.application == spark_application_path()
    assert op.application.endswith("airflow_provider_eo/spark/driver/application.py")
    assert op.application_args == ["--pipeline", "p", "--epoch-id", "{{ x }}"]
    assert (op.conf, op.env_vars) == ({"spark.executor.instances": "3"}, None)
    assert {"epoch_id", "fencing_token"} <= set(op.template_fields)


def test_only_connection_ids_that_are_not_the_defaults_go_on_the_command_line() -> None:
    default = WriteEpochOperator(task_id="w1", pipeline="p", epoch_id=1, spec=SPEC)
    custom = WriteEpochOperator(
        task_id="w2",
        pipeline="p",
        epoch_id=1,
        spec=SPEC,
        kafka_conn_id="kafka_b",
        schema_registry_conn_id="sr_b",
    )
    # a JSON pipeline never needs the registry: neither its id nor its definition is handed over
    assert (default.conn_id_args(), custom.conn_id_args()) == ([], ["--kafka-conn-id", "kafka_b"])


def test_the_submission_of_an_epoch_is_computed_from_its_inputs_alone() -> None:
    actor = Actor.task("eo_stream__p", "manual__1", "write", 2)
    args = application_args(
        pipeline="p", epoch_id=7, fencing_token="42", actor=actor, conn_id_args=["--kafka-conn-id", "k"]
    )
    assert args == [
        "--pipeline", "p", "--epoch-id", "7", "--fencing-token", "42",
        "--actor-kind", "task", "--actor", "eo_stream__p/manual__1/write try 2", "--kafka-conn-id", "k",
    ]  # fmt: skip
    assert application_args(pipeline="p", epoch_id="7", fencing_token=None, actor=actor, conn_id_args=[])[
        :5
    ] == ["--pipeline", "p", "--epoch-id", "7", "--actor-kind"]
    env = {"AIRFLOW_CONN_EO_LEDGER": "postgresql://u:secret@h/d"}
    conf = {"spark.ui.enabled": "false"}
    client = write_submission(
        args=args, conf=conf, py_files="/opt/x.py", package_zip="/tmp/eo.zip", files=None, env=env,
        env_file=None, deploy_mode="client",
    )  # fmt: skip
    assert client == WriteSubmission(conf, "/opt/x.py,/tmp/eo.zip", None, args, env)
    cluster = write_submission(
        args=args, conf=conf, py_files=None, package_zip=None, files="/opt/a.csv", env=env,
        env_file="/tmp/eo-driver-env-x/eo-driver-env.json", deploy_mode="cluster",
    )  # fmt: skip
    assert cluster == WriteSubmission(
        conf,
        None,
        "/opt/a.csv,/tmp/eo-driver-env-x/eo-driver-env.json",
        [*args, "--driver-env-file", "eo-driver-env.json"],
        {},
    )
    assert "secret" not in repr(client) + repr(cluster)  # the environment is hidden
    with pytest.raises(ValueError, match="the driver's environment travels in a file"):
        write_submission(
            args=args, conf=conf, py_files=None, package_zip=None, files=None, env=env, env_file=None,
            deploy_mode="cluster",
        )  # fmt: skip


def test_cluster_mode_on_a_standalone_or_kubernetes_master_is_refused_before_anything_runs() -> None:
    check_deploy_mode("p", "spark://m:7077", "client")
    check_deploy_mode("p", "k8s://https://k:6443", "client")
    check_deploy_mode("p", "yarn", "cluster")
    with pytest.raises(ConfigError, match=r"^pipeline p: deploy_mode 'cluster' with master 'spark://m:7077'"):
        check_deploy_mode("p", "spark://m:7077", "cluster")
    with pytest.raises(
        ConfigError, match=r"written into the driver pod's spec \(spark.kubernetes.driverEnv\)"
    ):
        check_deploy_mode("p", "k8s://https://k:6443", "cluster")


def test_a_missing_local_py_files_entry_is_refused(tmp_path: Path) -> None:
    present = tmp_path / "extra.zip"
    present.write_bytes(b"PK")
    given = f"{present},local:/opt/on-every-node.zip,hdfs:///libs/x.zip,file://{present}"
    assert local_paths([given]) == [str(present), str(present)]
    check_local_files("p", given, {"spark.submit.pyFiles": str(present)})
    with pytest.raises(ConfigError, match=r"--py-files entry '/nope/a.zip' \(from spark.submit.pyFiles\)"):
        check_local_files("p", str(present), {"spark.submit.pyFiles": "/nope/a.zip"})
