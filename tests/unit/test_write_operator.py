"""WriteEpochOperator's hand-over of settings to Spark: never on the command line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from airflow_provider_eo.config import parse_pipelines_text
from airflow_provider_eo.operators.spark_submission import write_properties_file
from airflow_provider_eo.operators.write import WriteEpochOperator, spark_application_path

SPEC = parse_pipelines_text(
    "pipelines:\n  - name: p\n    topics: [t]\n    hbase: {table: t}\n"
    "    spark: {deploy_mode: cluster, conf: {spark.executor.instances: 3}}\n",
    "inline.yaml",
)["p"]


def test_properties_file_is_private_and_carries_conf_and_driver_env() -> None:
    path = write_properties_file(
        {"spark.executor.instances": "3"}, {"AIRFLOW_CONN_EO_LEDGER": "postgresql://u:p=w@h:1/d"}
    )
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert Path(path).read_text().splitlines() == [
            "spark.executor.instances=3",
            "spark.yarn.appMasterEnv.AIRFLOW_CONN_EO_LEDGER=postgresql\\://u\\:p\\=w@h\\:1/d",
            "spark.kubernetes.driverEnv.AIRFLOW_CONN_EO_LEDGER=postgresql\\://u\\:p\\=w@h\\:1/d",
        ]
    finally:
        os.unlink(path)


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
