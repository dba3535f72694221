"""WriteEpochOperator's hand-over of settings to Spark: never on the command line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from airflow_provider_eo.config import parse_pipelines_text
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.operators.submission_files import private_properties_file
from airflow_provider_eo.operators.write import WriteEpochOperator, spark_application_path
from airflow_provider_eo.operators.write_submission import (
    WriteSubmission,
    application_args,
    check_deploy_mode,
    properties_text,
    write_submission,
)

SPEC = parse_pipelines_text(
    "pipelines:\n  - name: p\n    topics: [t]\n    hbase: {table: t}\n"
    "    spark: {deploy_mode: cluster, conf: {spark.executor.instances: 3}}\n",
    "inline.yaml",
)["p"]


def test_properties_file_is_private_and_carries_conf_and_driver_env() -> None:
    text = properties_text(
        {"spark.executor.instances": "3"}, {"AIRFLOW_CONN_EO_LEDGER": "postgresql://u:p=w@h:1/d"}
    )
    with private_properties_file(text) as path:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert Path(path).read_text().splitlines() == [
            "spark.executor.instances=3",
            "spark.yarn.appMasterEnv.AIRFLOW_CONN_EO_LEDGER=postgresql\\://u\\:p\\=w@h\\:1/d",
            "spark.kubernetes.driverEnv.AIRFLOW_CONN_EO_LEDGER=postgresql\\://u\\:p\\=w@h\\:1/d",
        ]
    assert not Path(path).exists()  # deleted when the block exits


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
        args=args, conf=conf, py_files="/opt/x.py", package_zip="/tmp/eo.zip", env=env, deploy_mode="client"
    )
    assert client == WriteSubmission(conf, "/opt/x.py,/tmp/eo.zip", args, None, env)
    cluster = write_submission(
        args=args, conf=conf, py_files=None, package_zip=None, env=env, deploy_mode="cluster"
    )
    assert cluster == WriteSubmission({}, None, args, properties_text(conf, env), {})
    assert "secret" not in repr(client) + repr(cluster)  # the environment and the file's text are hidden


def test_cluster_mode_on_a_standalone_master_is_refused_before_anything_runs() -> None:
    check_deploy_mode("p", "spark://m:7077", "client")
    check_deploy_mode("p", "yarn", "cluster")
    with pytest.raises(ConfigError, match=r"^pipeline p: deploy_mode 'cluster' with master 'spark://m:7077'"):
        check_deploy_mode("p", "spark://m:7077", "cluster")
