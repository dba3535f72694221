"""WriteEpochOperator's spark-submit command line: the master (pipeline YAML over the
connection), resources, the package zip on non-local masters, secrets kept off it.

The command is what the Spark provider's hook builds (``_build_spark_submit_command``)
from the operator's settings; connections come from ``AIRFLOW_CONN_*`` variables.
"""

from __future__ import annotations

import inspect
import json
import shutil
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from airflow_provider_eo.config import parse_pipelines_text
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.operators.write import WriteEpochOperator, spark_application_path


def operator(spark: dict[str, Any] | None = None, **kwargs: Any) -> WriteEpochOperator:
    text = json.dumps(
        {"pipelines": [{"name": "p", "topics": ["t"], "hbase": {"table": "t"}, "spark": spark or {}}]}
    )
    spec = parse_pipelines_text(text, "p.yaml")["p"]
    return WriteEpochOperator(task_id="write", pipeline="p", epoch_id=7, spec=spec, **kwargs)


def command(op: WriteEpochOperator) -> list[str]:
    return op._get_hook()._build_spark_submit_command(op.application)


def options(cmd: list[str]) -> list[str]:
    """The spark-submit options: everything between the binary and the application file."""
    return cmd[1 : cmd.index(spark_application_path())]


@pytest.fixture(autouse=True)
def spark_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[*]"}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_CLUSTER", json.dumps({"conn_type": "spark", "host": "spark://conn-master:7077"})
    )


@pytest.fixture
def shipped() -> Iterator[list[WriteEpochOperator]]:
    """Operators whose ``_ship_package`` ran; their temp zips are removed afterwards."""
    ops: list[WriteEpochOperator] = []
    yield ops
    for op in ops:
        if op._zip_dir:
            shutil.rmtree(op._zip_dir)


def test_master_from_the_pipeline_overrides_the_connection() -> None:
    op = operator({"master": "spark://yaml-master:7077"}, spark_conn_id="spark_cluster")
    cmd = command(op)
    assert options(cmd)[:2] == ["--master", "spark://yaml-master:7077"]
    assert cmd.count("--master") == 1


def test_master_from_the_connection_without_one_in_the_pipeline() -> None:
    assert options(command(operator(spark_conn_id="spark_cluster")))[:2] == [
        "--master",
        "spark://conn-master:7077",
    ]
    assert options(command(operator()))[:2] == ["--master", "local[*]"]


def test_master_from_the_pipeline_needs_no_connection() -> None:
    op = operator({"master": "spark://yaml-master:7077"}, spark_conn_id="no_such_connection")
    assert options(command(op))[:2] == ["--master", "spark://yaml-master:7077"]


def test_resources_on_yarn_are_spark_submit_options() -> None:
    resources = {
        "driver_memory": "1g",
        "driver_cores": 2,
        "executor_memory": "4g",
        "executor_cores": 2,
        "num_executors": 3,
    }
    op = operator({"master": "yarn", "resources": resources, "conf": {"spark.speculation": False}})
    assert options(command(op)) == [
        "--master", "yarn",
        "--conf", "spark.driver.cores=2",
        "--conf", "spark.speculation=false",
        "--num-executors", "3",
        "--executor-cores", "2",
        "--executor-memory", "4g",
        "--driver-memory", "1g",
        "--name", "eo-write-p",
        "--deploy-mode", "client",
    ]  # fmt: skip


def test_num_executors_on_standalone_is_total_executor_cores() -> None:
    one_core = operator({"master": "spark://m:7077", "resources": {"num_executors": 2}})
    assert options(command(one_core)) == [
        "--master", "spark://m:7077",
        "--total-executor-cores", "2",
        "--executor-cores", "1",
        "--name", "eo-write-p",
        "--deploy-mode", "client",
    ]  # fmt: skip
    two_cores = operator({"master": "spark://m:7077", "resources": {"num_executors": 3, "executor_cores": 2}})
    opts = options(command(two_cores))
    assert opts[opts.index("--total-executor-cores") + 1] == "6"
    assert opts[opts.index("--executor-cores") + 1] == "2"
    assert "--num-executors" not in opts


def test_connection_environment_stays_off_the_command_line() -> None:
    op = operator({"master": "spark://m:7077"})
    op.env_vars = {"AIRFLOW_CONN_EO_LEDGER": "postgresql://eo:s3cr3t-pw@db:5432/eo"}
    hook = op._get_hook()
    cmd = hook._build_spark_submit_command(op.application)
    assert "s3cr3t-pw" not in " ".join(cmd)
    assert cmd[-5:] == [spark_application_path(), "--pipeline", "p", "--epoch-id", "7"]
    assert hook._env == op.env_vars  # handed to the spark-submit process as its environment


def test_package_zip_is_shipped_to_a_cluster(shipped: list[WriteEpochOperator]) -> None:
    op = operator({"master": "spark://m:7077"}, py_files="/opt/extra.py")
    shipped.append(op)
    op._ship_package()
    extra, package = str(op.py_files).split(",")
    assert extra == "/opt/extra.py"
    with zipfile.ZipFile(package) as archive:
        assert "airflow_provider_eo/spark/write_task.py" in archive.namelist()
    opts = options(command(op))
    assert opts[opts.index("--py-files") + 1] == f"/opt/extra.py,{package}"


def test_local_master_ships_no_zip(shipped: list[WriteEpochOperator]) -> None:
    op = operator()
    shipped.append(op)
    op._ship_package()
    assert op.py_files is None
    assert "--py-files" not in options(command(op))


def test_cluster_mode_on_a_standalone_connection_is_refused(shipped: list[WriteEpochOperator]) -> None:
    op = operator({"deploy_mode": "cluster"}, spark_conn_id="spark_cluster")
    shipped.append(op)
    with pytest.raises(
        ConfigError, match="pipeline p: deploy_mode 'cluster' with master 'spark://conn-master:7077'"
    ):
        op._ship_package()


def test_every_hook_parameter_is_passed() -> None:
    """The operator rebuilds the provider's hook call; a new hook parameter must not be dropped."""
    parameters = set(inspect.signature(SparkSubmitHook.__init__).parameters) - {"self"}
    assert set(operator().hook_arguments()) == parameters


def test_hook_matches_the_providers_apart_from_the_master_override() -> None:
    op = operator({"resources": {"executor_memory": "2g"}}, spark_conn_id="spark_cluster", verbose=True)
    ours = vars(op._get_hook())
    theirs = vars(SparkSubmitOperator._get_hook(op))
    assert ours.pop("_master_override") is None
    assert ours == theirs
