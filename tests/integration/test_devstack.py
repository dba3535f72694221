"""The local stack through its CLI: up/status/env/down, as a user runs it.

This module starts its own stack (not the shared ``stack`` fixture) in a temp dir,
because it stops it; the last test checks that ``down`` leaves no process behind.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import happybase
import psycopg2
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from eo_devtools.stack.jvm_artifacts import java_binary
from eo_devtools.stack.process import group_members
from tests.conftest import new_stack_dir
from tests.kafka_helpers import consume_range, produce

pytestmark = pytest.mark.integration

EO_STACK = str(Path(sys.executable).parent / "eo-stack")


def eo_stack(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EO_STACK, *args], capture_output=True, text=True, timeout=180, check=False)


def processes_referencing(path: Path) -> dict[int, str]:
    """Pid -> command line (NULs as spaces, read once at scan time) of every process whose
    command line or working directory lies under ``path``. A process that exits while the
    scan runs is skipped, so callers never re-read a pid that may be gone."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if str(path) in cmdline or cwd.startswith(str(path)):
            found[int(entry.name)] = cmdline
    return found


@pytest.fixture(scope="module")
def state_dir() -> Iterator[Path]:
    path = new_stack_dir("eo-devstack-test-")
    result = eo_stack("up", "--state-dir", str(path))
    assert result.returncode == 0, result.stderr
    yield path
    eo_stack("down", "--state-dir", str(path))
    shutil.rmtree(path, ignore_errors=True)


def status(state_dir: Path) -> dict[str, dict[str, object]]:
    result = eo_stack("status", "--state-dir", str(state_dir))
    assert result.returncode == 0, result.stderr
    parsed: dict[str, dict[str, object]] = json.loads(result.stdout)
    return parsed


def exported_env(state_dir: Path) -> dict[str, str]:
    result = eo_stack("env", "--state-dir", str(state_dir))
    assert result.returncode == 0, result.stderr
    env = {}
    for line in result.stdout.splitlines():
        keyword, assignment = shlex.split(line)
        assert keyword == "export"
        name, _, value = assignment.partition("=")
        env[name] = value
    return env


def test_status_lists_every_service_running_and_healthy(state_dir: Path) -> None:
    services = status(state_dir)
    assert list(services) == ["postgres", "kafka", "hbase", "hbase-thrift"]
    for name, service in services.items():
        assert service["state"] == "running", name
        assert service["healthy"] is True, name
        assert Path(f"/proc/{service['pid']}").exists()
        assert isinstance(service["rss_mb"], float) and service["rss_mb"] > 0, name
    assert set(services["kafka"]["ports"]) == {"kafka", "kafka-controller"}  # type: ignore[arg-type]
    assert set(services["hbase"]["ports"]) == {"hbase-master", "hbase-regionserver", "hbase-zookeeper"}  # type: ignore[arg-type]
    all_ports = [p for s in services.values() for p in s["ports"].values()]  # type: ignore[attr-defined]
    assert len(all_ports) == len(set(all_ports)) == 7


def test_the_servers_are_apache_kafka_and_apache_hbase(state_dir: Path) -> None:
    cmdlines = processes_referencing(state_dir).values()
    assert any(" kafka.Kafka " in c and "kafka_2.13" not in c for c in cmdlines)
    assert any(" org.apache.hadoop.hbase.master.HMaster start" in c for c in cmdlines)
    assert any(" org.apache.hadoop.hbase.thrift.ThriftServer " in c for c in cmdlines)
    jars = {
        p.name
        for p in Path(
            next(c for c in cmdlines if " kafka.Kafka " in c).split(" -cp ")[1].split()[0].split(":")[-1]
        ).parent.glob("*.jar")
    }
    assert "kafka_2.13-4.1.1.jar" in jars


def test_second_up_keeps_the_same_processes_and_ports(state_dir: Path) -> None:
    def without_rss(services: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
        return {name: {k: v for k, v in s.items() if k != "rss_mb"} for name, s in services.items()}

    before = status(state_dir)
    result = eo_stack("up", "--state-dir", str(state_dir))
    assert result.returncode == 0, result.stderr
    assert without_rss(json.loads(result.stdout)) == without_rss(before)


def test_env_prints_the_four_connections_in_shell_syntax(state_dir: Path) -> None:
    env = exported_env(state_dir)
    ports = {name: s["port"] for name, s in status(state_dir).items()}
    assert set(env) == {
        "AIRFLOW_CONN_EO_LEDGER",
        "AIRFLOW_CONN_EO_KAFKA",
        "AIRFLOW_CONN_EO_HBASE",
        "AIRFLOW_CONN_SPARK_DEFAULT",
    }
    assert env["AIRFLOW_CONN_EO_LEDGER"].startswith("postgresql://eo:")
    assert env["AIRFLOW_CONN_EO_LEDGER"].endswith(f"@127.0.0.1:{ports['postgres']}/eo")
    assert json.loads(env["AIRFLOW_CONN_EO_KAFKA"]) == {
        "conn_type": "kafka",
        "extra": {"bootstrap.servers": f"127.0.0.1:{ports['kafka']}"},
    }
    assert json.loads(env["AIRFLOW_CONN_EO_HBASE"]) == {
        "conn_type": "hbase",
        "host": "127.0.0.1",
        "port": ports["hbase-thrift"],
        "extra": {"transport": "buffered", "protocol": "binary", "table_prefix": None, "timeout_ms": 30000},
    }
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"]) == {"conn_type": "spark", "host": "local[*]"}


def test_postgres_accepts_the_printed_dsn(state_dir: Path) -> None:
    dsn = exported_env(state_dir)["AIRFLOW_CONN_EO_LEDGER"]
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("select current_user, current_database(), 1")
        assert cur.fetchone() == ("eo", "eo", 1)
    conn.close()


def test_password_never_appears_in_command_lines_logs_or_status(state_dir: Path) -> None:
    password = (state_dir / "secrets" / "ledger_password").read_text().strip()
    assert len(password) >= 24
    assert oct((state_dir / "secrets" / "ledger_password").stat().st_mode & 0o777) == "0o600"
    referencing = processes_referencing(state_dir)
    assert referencing, "no process of the stack was found to check"
    for pid, cmdline in referencing.items():
        assert password not in cmdline, f"pid {pid}'s command line holds the ledger password"
    for log in (state_dir / "logs").iterdir():
        assert password not in log.read_text(errors="replace"), log
    assert password not in eo_stack("up", "--state-dir", str(state_dir)).stdout
    assert password not in eo_stack("status", "--state-dir", str(state_dir)).stdout


def test_produce_consume_round_trip_with_the_printed_kafka_connection(state_dir: Path) -> None:
    conn = json.loads(exported_env(state_dir)["AIRFLOW_CONN_EO_KAFKA"])
    bootstrap = conn["extra"]["bootstrap.servers"]
    topic = f"devstack-{uuid.uuid4().hex[:10]}"
    admin = AdminClient(conn["extra"])
    admin.create_topics([NewTopic(topic, num_partitions=3)])[topic].result(timeout=15)
    records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(7)]
    assert produce(bootstrap, topic, records, partition=2) == 7
    assert consume_range(bootstrap, topic, 2, 3, 7) == [
        (i, f"k{i}".encode(), f"v{i}".encode()) for i in range(3, 7)
    ]


def test_hbase_thrift_server_answers_with_the_printed_connection(state_dir: Path) -> None:
    conn = json.loads(exported_env(state_dir)["AIRFLOW_CONN_EO_HBASE"])
    table = f"devstack_{uuid.uuid4().hex[:10]}"
    connection = happybase.Connection(conn["host"], conn["port"], timeout=conn["extra"]["timeout_ms"])
    try:
        connection.create_table(table, {"cf": {}})
        connection.table(table).put(b"row1", {b"cf:a": b"1"})
        assert connection.table(table).row(b"row1") == {b"cf:a": b"1"}
        assert table.encode() in connection.tables()
    finally:
        connection.close()


def test_busy_port_fails_naming_port_and_service_and_starts_nothing() -> None:
    other_dir = new_stack_dir("eo-devstack-busy-")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = eo_stack("up", "--state-dir", str(other_dir), "--kafka-port", str(port))
    try:
        assert result.returncode == 1
        assert f"cannot start kafka (kafka): port {port} on 127.0.0.1 is already in use" in result.stderr
        assert processes_referencing(other_dir) == {}
        assert list((other_dir / "pids").iterdir()) == []
    finally:
        shutil.rmtree(other_dir, ignore_errors=True)


def test_missing_postgres_binaries_fail_with_a_clear_error_and_start_nothing(tmp_path: Path) -> None:
    other_dir = new_stack_dir("eo-devstack-nobin-")
    env = {**os.environ, "EO_PG_BIN_DIR": str(tmp_path / "no-such-bin")}
    result = subprocess.run(
        [EO_STACK, "up", "--state-dir", str(other_dir)], capture_output=True, text=True, env=env, timeout=60
    )
    try:
        assert result.returncode == 1
        assert (
            f"postgres: initdb and postgres not found in EO_PG_BIN_DIR={tmp_path / 'no-such-bin'}"
            in result.stderr
        )
        assert processes_referencing(other_dir) == {}
    finally:
        shutil.rmtree(other_dir, ignore_errors=True)


def test_missing_java_fails_with_a_clear_error_and_starts_nothing(tmp_path: Path) -> None:
    other_dir = new_stack_dir("eo-devstack-nojava-")
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk")}
    result = subprocess.run(
        [EO_STACK, "up", "--state-dir", str(other_dir)], capture_output=True, text=True, env=env, timeout=60
    )
    try:
        assert result.returncode == 1
        assert "java: no Java runtime found (JAVA_HOME or PATH); Apache Kafka and HBase need Java 17+" in (
            result.stderr
        )
        assert processes_referencing(other_dir) == {}
    finally:
        shutil.rmtree(other_dir, ignore_errors=True)


def test_uncached_jars_without_maven_fail_with_a_clear_error_and_start_nothing(tmp_path: Path) -> None:
    other_dir = new_stack_dir("eo-devstack-nomvn-")
    java_home = Path(java_binary()).resolve().parents[1]
    env = {
        **os.environ,
        "EO_JVM_CACHE": str(tmp_path / "empty-cache"),
        "JAVA_HOME": str(java_home),
        "PATH": str(Path(sys.executable).parent),  # the venv: no mvn on it
    }
    result = subprocess.run(
        [EO_STACK, "up", "--state-dir", str(other_dir)], capture_output=True, text=True, env=env, timeout=60
    )
    try:
        assert result.returncode == 1
        assert f"kafka: its jars are not cached in {tmp_path / 'empty-cache'}" in result.stderr
        assert "Maven (mvn) is not installed; run scripts/setup.sh" in result.stderr
        assert processes_referencing(other_dir) == {}
    finally:
        shutil.rmtree(other_dir, ignore_errors=True)


def test_a_server_that_does_not_come_up_fails_with_the_tail_of_its_log() -> None:
    other_dir = new_stack_dir("eo-devstack-broken-")
    meta = other_dir / "kafka" / "data" / "meta.properties"
    meta.parent.mkdir(parents=True)
    meta.write_text("version=1\nnode.id=7\n")  # storage of another node: Kafka refuses to start
    try:
        result = eo_stack("up", "--state-dir", str(other_dir))
        assert result.returncode == 1
        assert "eo-stack up: kafka (pid " in result.stderr
        assert (
            "exited during startup; last lines of " + str(other_dir / "logs" / "kafka.log") in result.stderr
        )
        assert "meta.properties" in result.stderr  # Kafka's own words, from the log tail
    finally:
        eo_stack("down", "--state-dir", str(other_dir))
        assert processes_referencing(other_dir) == {}
        shutil.rmtree(other_dir, ignore_errors=True)


def test_topics_records_and_tables_survive_down_then_up(state_dir: Path) -> None:
    env = exported_env(state_dir)
    bootstrap = json.loads(env["AIRFLOW_CONN_EO_KAFKA"])["extra"]["bootstrap.servers"]
    hbase = json.loads(env["AIRFLOW_CONN_EO_HBASE"])
    topic = f"durable-{uuid.uuid4().hex[:10]}"
    table = f"durable_{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(timeout=15)
    records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(50)]
    assert produce(bootstrap, topic, records, partition=1) == 50
    connection = happybase.Connection(hbase["host"], hbase["port"])
    connection.create_table(table, {"cf": {}})
    connection.table(table).put(b"row1", {b"cf:a": b"1"}, timestamp=42)
    connection.close()

    assert eo_stack("down", "--state-dir", str(state_dir)).returncode == 0
    assert processes_referencing(state_dir) == {}
    result = eo_stack("up", "--state-dir", str(state_dir))
    assert result.returncode == 0, result.stderr

    assert exported_env(state_dir) == env  # same ports, same password
    assert consume_range(bootstrap, topic, 1, 0, 50) == [(i, k, v) for i, (k, v) in enumerate(records)]
    connection = happybase.Connection(hbase["host"], hbase["port"])
    try:
        assert connection.table(table).cells(b"row1", b"cf:a", include_timestamp=True) == [(b"1", 42)]
    finally:
        connection.close()


def test_down_leaves_no_process_behind(state_dir: Path) -> None:
    pids = [int(s["pid"]) for s in status(state_dir).values() if s["pid"] is not None]  # type: ignore[call-overload]
    assert len(pids) == 4
    assert processes_referencing(state_dir) != {}
    result = eo_stack("down", "--state-dir", str(state_dir))
    assert result.returncode == 0, result.stderr
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists() and group_members(pid)] == []
    assert all(group_members(pid) == [] for pid in pids)
    assert processes_referencing(state_dir) == {}
    assert {s["state"] for s in status(state_dir).values()} == {"stopped"}
