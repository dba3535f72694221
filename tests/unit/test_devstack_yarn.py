"""The local YARN's pieces that need no running JVM: the configuration files, the daemons'
command lines, the Spark settings for cluster mode, the ``spark_yarn`` connection and the
CLI. YARN itself runs in tests/integration/test_devstack_yarn.py."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from eo_devtools.stack.cli import _parser, yarn_hint
from eo_devtools.stack.connections import stack_conn_env
from eo_devtools.stack.spark_services import spark_home
from eo_devtools.stack.yarn_config import (
    NM_PORT_KEYS,
    RM_PORT_KEYS,
    capacity_scheduler,
    client_conf_dir,
    conf_dir,
    core_site,
    hadoop_xml,
    write_conf,
    yarn_site,
)
from eo_devtools.stack.yarn_services import (
    NodeManagerService,
    ResourceManagerService,
    container_processes,
    node_port,
)
from eo_devtools.stack.yarn_spark import conf_args, verified_spark_conf, yarn_spark_conf, yarn_submit_env

PORTS = {key: 21000 + i for i, key in enumerate((*RM_PORT_KEYS, *NM_PORT_KEYS))}


def parsed(path: Path) -> dict[str, str]:
    """A Hadoop configuration file read back as name -> value."""
    root = ET.parse(path).getroot()
    return {prop.findtext("name") or "": prop.findtext("value") or "" for prop in root.iter("property")}


def test_every_address_is_loopback_on_its_own_port() -> None:
    site = yarn_site(Path("/s"), PORTS)
    addresses = {k: v for k, v in site.items() if k.endswith(".address")}
    assert addresses == {
        "yarn.resourcemanager.address": "127.0.0.1:21000",
        "yarn.resourcemanager.scheduler.address": "127.0.0.1:21001",
        "yarn.resourcemanager.resource-tracker.address": "127.0.0.1:21002",
        "yarn.resourcemanager.admin.address": "127.0.0.1:21003",
        "yarn.resourcemanager.webapp.address": "127.0.0.1:21004",
        "yarn.nodemanager.address": "127.0.0.1:21005",
        "yarn.nodemanager.localizer.address": "127.0.0.1:21006",
        "yarn.nodemanager.webapp.address": "127.0.0.1:21007",
    }


def test_a_missing_port_is_named() -> None:
    ports = {k: v for k, v in PORTS.items() if k != "yarn-nm-webapp"}
    with pytest.raises(KeyError, match="yarn-nm-webapp"):
        yarn_site(Path("/s"), ports)


def test_every_directory_is_under_the_state_dir() -> None:
    state = Path("/state/x")
    site = {**core_site(state), **yarn_site(state, PORTS)}
    paths = {k: v.removeprefix("file://") for k, v in site.items() if v.startswith(("/", "file:///s"))}
    assert set(paths) >= {
        "hadoop.tmp.dir",
        "yarn.nodemanager.local-dirs",
        "yarn.nodemanager.log-dirs",
        "yarn.node-attribute.fs-store.root-dir",
    }
    assert sorted(k for k, v in paths.items() if not v.startswith("/state/x/yarn/")) == []
    assert site["fs.defaultFS"] == "file:///"


def test_settings_the_local_cluster_depends_on() -> None:
    site = yarn_site(Path("/s"), PORTS)
    assert (site["yarn.nodemanager.vmem-check-enabled"], site["yarn.nodemanager.pmem-check-enabled"]) == (
        "false",
        "false",
    )
    assert (site["yarn.log-aggregation-enable"], site["yarn.nodemanager.delete.debug-delay-sec"]) == (
        "false",
        "600",
    )
    assert capacity_scheduler()["yarn.scheduler.capacity.root.queues"] == "default"


def test_hadoop_xml_escapes_and_reads_back(tmp_path: Path) -> None:
    properties = {"a.b": "x<y & z>", "c": ""}
    (tmp_path / "site.xml").write_text(hadoop_xml(properties))
    assert parsed(tmp_path / "site.xml") == properties


def test_write_conf_gives_clients_core_and_yarn_site(tmp_path: Path) -> None:
    write_conf(tmp_path, PORTS)
    client = client_conf_dir(tmp_path)
    assert sorted(p.name for p in client.iterdir()) == ["core-site.xml", "yarn-site.xml"]
    assert parsed(client / "yarn-site.xml")["yarn.resourcemanager.address"] == "127.0.0.1:21000"
    assert parsed(client / "core-site.xml")["fs.defaultFS"] == "file:///"
    daemon = sorted(p.name for p in conf_dir(tmp_path).iterdir())
    assert daemon == ["capacity-scheduler.xml", "core-site.xml", "log4j.properties", "yarn-site.xml"]


def test_daemon_command_lines_and_environment(tmp_path: Path) -> None:
    rm = ResourceManagerService(tmp_path, PORTS)
    argv = rm.argv()
    assert argv[-1] == "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
    classpath = argv[argv.index("-cp") + 1].split(":")
    assert classpath[0] == str(tmp_path / "yarn" / "conf")
    assert classpath[1].endswith("/lib/*")
    assert f"-Djava.io.tmpdir={tmp_path / 'yarn' / 'tmp'}" in argv
    env = NodeManagerService(tmp_path, PORTS).environment()
    assert Path(env["JAVA_HOME"], "bin", "java").is_file()
    assert NodeManagerService(tmp_path, PORTS).argv()[-1] == (
        "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
    )
    assert node_port("localhost:21005") == 21005


def test_spark_conf_for_cluster_mode(tmp_path: Path) -> None:
    conf = yarn_spark_conf(tmp_path)
    python = str(tmp_path / "spark" / "bin" / "python")
    assert conf["spark.yarn.stagingDir"] == f"file://{tmp_path}/yarn/staging"
    assert conf["spark.yarn.jars"] == f"local:{spark_home()}/jars/*"
    assert {k: conf[k] for k in conf if k.endswith(("python", "PYSPARK_PYTHON"))} == {
        "spark.pyspark.python": python,
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
        "spark.executorEnv.PYSPARK_PYTHON": python,
    }
    assert (conf["spark.driver.memory"], conf["spark.executor.memoryOverhead"]) == ("512m", "256m")
    assert verified_spark_conf(tmp_path).items() <= conf.items()
    assert conf_args({"a": "1", "b": "x=y"}) == ["--conf", "a=1", "--conf", "b=x=y"]
    env = yarn_submit_env(tmp_path)
    assert env["HADOOP_CONF_DIR"] == env["YARN_CONF_DIR"] == str(tmp_path / "yarn" / "client-conf")


def test_spark_yarn_connection_only_with_yarn() -> None:
    without = stack_conn_env("postgresql://x", "127.0.0.1:9092", 9090)
    assert "AIRFLOW_CONN_SPARK_YARN" not in without
    env = stack_conn_env("postgresql://x", "127.0.0.1:9092", 9090, yarn_webapp_url="http://127.0.0.1:21004")
    assert json.loads(env["AIRFLOW_CONN_SPARK_YARN"]) == {
        "conn_type": "spark",
        "host": "yarn",
        "extra": {
            "deploy-mode": "cluster",
            "queue": "default",
            "yarn_resourcemanager_webapp_address": "http://127.0.0.1:21004",
        },
    }


def test_cli_yarn_flag_and_hint() -> None:
    parser = _parser()
    assert [parser.parse_args(["up", *flag]).yarn for flag in ([], ["--yarn"], ["--no-yarn"])] == [
        None,
        True,
        False,
    ]
    status: dict[str, dict[str, object]] = {
        "yarn-resourcemanager": {
            "state": "running",
            "url": "http://127.0.0.1:21004",
            "nodes_alive": 1,
            "hadoop_conf_dir": "/s/yarn/client-conf",
        }
    }
    assert (
        yarn_hint(status)
        == "YARN: http://127.0.0.1:21004 (1 nodes alive; HADOOP_CONF_DIR=/s/yarn/client-conf)"
    )
    assert yarn_hint({}) is None


def test_container_processes_are_found_by_their_log_dir(tmp_path: Path) -> None:
    log_dir = tmp_path / "yarn" / "nm-logs" / "application_1_0001" / "container_1_0001_01_000001"
    other = tmp_path / "elsewhere" / "nm-logs" / "application_1_0001"
    ours = subprocess.Popen(["sleep", "30"], env={"LOG_DIRS": str(log_dir)})
    theirs = subprocess.Popen(["sleep", "30"], env={"LOG_DIRS": str(other)})
    try:
        assert container_processes(tmp_path) == [ours.pid]
    finally:
        for proc in (ours, theirs):
            proc.kill()
            proc.wait()
