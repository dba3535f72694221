"""The local stack's Spark cluster pieces that need no running JVM: command lines (the
Spark Connect server's too), ports, the ``spark_standalone`` connection and the CLI's hint.
The cluster itself runs in tests/integration/test_spark_standalone.py."""

from __future__ import annotations

import json
from pathlib import Path

from eo_devtools.stack.cli import spark_hint
from eo_devtools.stack.connections import stack_conn_env
from eo_devtools.stack.spark_connect import SERVER_CLASS, SparkConnectService
from eo_devtools.stack.spark_services import (
    SparkMasterService,
    SparkWorkerService,
    cluster_port_keys,
    master_url,
    recorded_workers,
    spark_home,
)

PORTS = {
    "spark-master": 7101,
    "spark-master-webui": 7102,
    "spark-worker-1": 7103,
    "spark-worker-1-webui": 7104,
    "spark-worker-2": 7105,
    "spark-worker-2-webui": 7106,
    "kafka": 9092,
}


def test_port_keys_and_worker_count() -> None:
    assert cluster_port_keys(2) == [key for key in PORTS if key != "kafka"]
    assert recorded_workers(PORTS) == 2
    assert recorded_workers({"kafka": 1}) == 0
    assert master_url(PORTS) == "spark://127.0.0.1:7101"


def test_master_and_worker_command_lines(tmp_path: Path) -> None:
    spark_class = str(spark_home() / "bin" / "spark-class")
    assert SparkMasterService(tmp_path, PORTS).argv() == [
        spark_class, "org.apache.spark.deploy.master.Master",
        "--host", "127.0.0.1", "--port", "7101", "--webui-port", "7102",
    ]  # fmt: skip
    worker = SparkWorkerService(tmp_path, PORTS, 2)
    assert (worker.name, worker.port_keys) == ("spark-worker-2", ("spark-worker-2", "spark-worker-2-webui"))
    assert worker.argv() == [
        spark_class, "org.apache.spark.deploy.worker.Worker", "spark://127.0.0.1:7101",
        "--host", "127.0.0.1", "--port", "7105", "--webui-port", "7106",
        "--cores", "1", "--memory", "1g", "--work-dir", str(tmp_path / "spark" / "work" / "worker-2"),
    ]  # fmt: skip
    env = worker.environment()
    assert (env["SPARK_LOCAL_IP"], env["SPARK_NO_DAEMONIZE"], env["SPARK_LOG_DIR"]) == (
        "127.0.0.1",
        "1",
        str(tmp_path / "logs"),
    )


def test_connect_server_command_line(tmp_path: Path) -> None:
    """A 512 MB heap with the serial collector and a fixed young generation, the C1 compiler
    only in a 64 MB code cache, the C heap trimmed every 5 s (docs/spark.md, "Production
    shape"), plan logging at WARN, loopback only, no UI."""
    server = SparkConnectService(tmp_path, {"connect-server": 15002})
    assert server.argv() == [
        str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", "local[2]",
        "--name", "eo-spark-connect", "--driver-memory", "512m",
        "--driver-java-options",
        f"-Dlog4j2.configurationFile=file:{tmp_path / 'spark-connect' / 'log4j2.properties'}"
        " -XX:+UseSerialGC -Xms128m -Xmn48m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30"
        " -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m -XX:TrimNativeHeapInterval=5000",
        "--conf", "spark.connect.grpc.binding.port=15002",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.local.dir={tmp_path / 'spark-connect'}",
        "--conf", "spark.ui.enabled=false",
        "spark-internal",
    ]  # fmt: skip


def test_connect_server_environment_caps_the_c_heaps_arenas(tmp_path: Path) -> None:
    """glibc's arenas capped at 2 for the server's ~300 threads (docs/spark.md)."""
    assert SparkConnectService(tmp_path, {"connect-server": 15002}).environment()["MALLOC_ARENA_MAX"] == "2"


def test_executor_python_hides_editable_installs(tmp_path: Path) -> None:
    SparkMasterService(tmp_path, PORTS).prepare()
    script = (tmp_path / "spark" / "bin" / "python").read_text()
    assert script.startswith("#!/bin/sh\n")
    assert script.rstrip().endswith('-S "$@"')  # no site processing: no .pth files, no editable finders


def test_standalone_connection_only_with_a_cluster() -> None:
    without = stack_conn_env("postgresql://u@h/eo", 1, 2)
    assert "AIRFLOW_CONN_SPARK_STANDALONE" not in without
    with_cluster = stack_conn_env("postgresql://u@h/eo", 1, 2, "spark://127.0.0.1:7101")
    assert json.loads(with_cluster["AIRFLOW_CONN_SPARK_STANDALONE"]) == {
        "conn_type": "spark",
        "host": "spark://127.0.0.1:7101",
        "extra": {"deploy-mode": "client"},
    }
    assert with_cluster["AIRFLOW_CONN_SPARK_DEFAULT"] == without["AIRFLOW_CONN_SPARK_DEFAULT"]


def test_cli_hint_names_the_master_and_live_workers() -> None:
    master = {
        "state": "running",
        "url": "spark://127.0.0.1:7101",
        "workers_alive": 2,
        "webui": "http://127.0.0.1:7102",
    }
    assert spark_hint({"spark-master": master}) == (
        "Spark master: spark://127.0.0.1:7101 (2 workers alive; UI http://127.0.0.1:7102)"
    )
    assert spark_hint({"kafka": {"state": "running"}}) is None
