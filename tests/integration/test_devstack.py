"""The local stack through its CLI: up/status/env/down, as a user runs it.

This module starts its own stack (not the shared ``stack`` fixture) in a temp dir,
because it stops it; ``eo-stack up`` starts Airflow too (its default, what a newcomer
runs). The last test checks that ``down`` leaves no process and no listening port behind,
and that ``up`` after it serves what was stored before (one ``down``/``up`` for both).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import happybase
import psutil
import psycopg2
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.dags.factory import RECOVERY_DAG_ID, backfill_dag_id, build_dags, stream_dag_id
from eo_devtools.stack.airflow_api import AirflowApiError, AirflowClient
from eo_devtools.stack.jvm_artifacts import java_binary
from eo_devtools.stack.ports import is_port_in_use
from eo_devtools.stack.process import group_members, kill_state_dir
from eo_devtools.stack.stack import REPO_DAGS_DIR
from tests.conftest import new_stack_dir
from tests.kafka_helpers import consume_range, produce

pytestmark = pytest.mark.integration

EO_STACK = str(Path(sys.executable).parent / "eo-stack")
CORE_SERVICES = ["postgres", "kafka", "hbase", "hbase-thrift", "schema-registry"]
AIRFLOW_SERVICES = ["airflow-api-server", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"]


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


def processes_with_airflow_home(home: Path) -> dict[int, str]:
    """Pid -> command line of every process whose environment has ``AIRFLOW_HOME=<home>``
    (what every Airflow process of the stack and every task it runs inherits)."""
    found: dict[int, str] = {}
    marker = f"AIRFLOW_HOME={home}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def listening_ports(pids: list[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state held by one of ``pids``."""
    wanted = set(pids)
    return {
        (c.laddr.ip, c.laddr.port)
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.pid in wanted
    }


@pytest.fixture(scope="module")
def state_dir() -> Iterator[Path]:
    path = new_stack_dir("eo-devstack-test-")
    try:
        result = eo_stack("up", "--state-dir", str(path))
        assert result.returncode == 0, result.stderr
        yield path
    finally:  # ``down`` itself is tested last; the state is deleted next, so a kill is enough
        kill_state_dir(path)
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
    assert list(services) == CORE_SERVICES + AIRFLOW_SERVICES
    for name, service in services.items():
        assert service["state"] == "running", name
        assert service["healthy"] is True, name
        assert Path(f"/proc/{service['pid']}").exists()
        assert isinstance(service["rss_mb"], float) and service["rss_mb"] > 0, name
    assert set(services["kafka"]["ports"]) == {"kafka", "kafka-controller"}  # type: ignore[arg-type]
    assert set(services["hbase"]["ports"]) == {"hbase-master", "hbase-regionserver", "hbase-zookeeper"}  # type: ignore[arg-type]
    all_ports = [p for s in services.values() for p in s["ports"].values()]  # type: ignore[attr-defined]
    assert len(all_ports) == len(set(all_ports)) == 9
    registry = services["schema-registry"]
    assert registry["url"] == f"http://127.0.0.1:{registry['port']}/apis/ccompat/v7"
    api = services["airflow-api-server"]
    assert api["url"] == f"http://127.0.0.1:{api['port']}"
    assert api["login_file"] == str(state_dir / "airflow" / "login.json")
    result = eo_stack("status", "--state-dir", str(state_dir))
    assert result.stderr == (
        f"Airflow UI: {api['url']} (user and password in {api['login_file']}); "
        f"the Epochs page: {api['url']}/eo/\n"
    )


def test_airflow_serves_the_repository_dags_to_the_login_of_its_file(state_dir: Path) -> None:
    login_file = state_dir / "airflow" / "login.json"
    assert oct(login_file.stat().st_mode & 0o777) == "0o600"
    assert oct((state_dir / "airflow").stat().st_mode & 0o777) == "0o700"
    client = AirflowClient.from_login_file(login_file)
    assert client.username == "admin"
    expected = set(build_dags(REPO_DAGS_DIR / "pipelines.yaml"))
    assert {stream_dag_id("demo_events"), backfill_dag_id("demo_events"), RECOVERY_DAG_ID} <= expected
    for dag_id in expected:
        client.wait_for_dag(dag_id)
    served = {d["dag_id"] for d in client.api("GET", "dags?limit=100")["dags"]}
    assert served == expected
    dag = client.api("GET", f"dags/{stream_dag_id('demo_events')}")
    assert dag["fileloc"] == str(REPO_DAGS_DIR / "eo_pipelines.py")
    pipelines = client.api("GET", "/eo/api/pipelines")
    assert isinstance(pipelines, list)
    with pytest.raises(AirflowApiError) as refused:
        AirflowClient(client.url, "admin", "not-the-password").token()
    assert refused.value.status == 401


def test_airflow_listens_only_on_its_api_port_on_loopback(state_dir: Path) -> None:
    services = status(state_dir)
    pids = [m for name in AIRFLOW_SERVICES for m in group_members(int(services[name]["pid"]))]  # type: ignore[call-overload]
    assert listening_ports(pids) == {("127.0.0.1", services["airflow-api-server"]["port"])}


def test_the_servers_are_apache_kafka_apache_hbase_and_apicurio_registry(state_dir: Path) -> None:
    cmdlines = processes_referencing(state_dir).values()
    assert any(c.rstrip().endswith("/schema-registry-1-runner.jar") and " -Xmx256m " in c for c in cmdlines)
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


def test_env_prints_the_stack_connections_in_shell_syntax(state_dir: Path) -> None:
    env = exported_env(state_dir)
    ports = {name: s["port"] for name, s in status(state_dir).items()}
    assert set(env) == {
        "AIRFLOW_CONN_EO_LEDGER",
        "AIRFLOW_CONN_EO_LEDGER_TLS",  # the stack's PostgreSQL always serves TLS
        "AIRFLOW_CONN_EO_KAFKA",
        "AIRFLOW_CONN_EO_HBASE",
        "AIRFLOW_CONN_SCHEMA_REGISTRY",
        "AIRFLOW_CONN_SPARK_DEFAULT",
        "AIRFLOW_CONN_AIRFLOW_API",  # while the stack's Airflow API server runs (eo-ledger seek, replay)
    }
    login = json.loads((state_dir / "airflow" / "login.json").read_text())
    assert env["AIRFLOW_CONN_AIRFLOW_API"] == (
        f"http://{quote(login['username'], safe='')}:{quote(login['password'], safe='')}"
        f"@127.0.0.1:{ports['airflow-api-server']}"
    )
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
    assert json.loads(env["AIRFLOW_CONN_SCHEMA_REGISTRY"]) == {
        "conn_type": "http",
        "host": "127.0.0.1",
        "port": ports["schema-registry"],
        "schema": "http",
        "extra": {"path": "/apis/ccompat/v7"},
    }
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"]) == {"conn_type": "spark", "host": "local[*]"}


def test_postgres_accepts_the_printed_dsn(state_dir: Path) -> None:
    dsn = exported_env(state_dir)["AIRFLOW_CONN_EO_LEDGER"]
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("select current_user, current_database(), 1")
        assert cur.fetchone() == ("eo", "eo", 1)
    conn.close()


def leaked(secrets: dict[str, str], text: str) -> list[str]:
    """Names of the secrets that occur in ``text``."""
    return [name for name, value in secrets.items() if value in text]


def test_password_never_appears_in_command_lines_logs_or_status(state_dir: Path) -> None:
    password = (state_dir / "secrets" / "ledger_password").read_text().strip()
    assert len(password) >= 24
    assert oct((state_dir / "secrets" / "ledger_password").stat().st_mode & 0o777) == "0o600"
    airflow_secrets = json.loads((state_dir / "airflow" / "secrets.json").read_text())
    assert oct((state_dir / "airflow" / "secrets.json").stat().st_mode & 0o777) == "0o600"
    assert set(airflow_secrets) == {
        "jwt_secret",
        "api_secret_key",
        "fernet_key",
        "db_password",
        "admin_password",
    }
    secrets = {"ledger password": password, **airflow_secrets}
    referencing = processes_referencing(state_dir)
    assert referencing, "no process of the stack was found to check"
    assert set(processes_with_airflow_home(state_dir / "airflow")) <= set(referencing)
    for pid, cmdline in referencing.items():
        assert leaked(secrets, cmdline) == [], f"pid {pid}"
    logs = list((state_dir / "logs").iterdir())
    assert {log.name for log in logs} >= {f"{name}.log" for name in AIRFLOW_SERVICES}
    for log in logs:
        assert leaked(secrets, log.read_text(errors="replace")) == [], log
    for command in ("up", "status"):
        result = eo_stack(command, "--state-dir", str(state_dir))
        assert leaked(secrets, result.stdout + result.stderr) == []


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


def test_down_leaves_nothing_behind_and_topics_records_and_tables_survive_up(state_dir: Path) -> None:
    """One ``down`` then ``up`` (the module's last test): ``down`` leaves no process and no
    listening port, and what was stored before it is served again after ``up``."""
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

    login = (state_dir / "airflow" / "login.json").read_text()
    services = status(state_dir)
    pids = [int(s["pid"]) for s in services.values() if s["pid"] is not None]  # type: ignore[call-overload]
    assert len(pids) == 9
    ports = [p for s in services.values() for p in s["ports"].values()]  # type: ignore[attr-defined]
    assert processes_referencing(state_dir) != {}
    assert len(processes_with_airflow_home(state_dir / "airflow")) >= 3  # renamed ones hide it
    result = eo_stack("down", "--state-dir", str(state_dir))
    assert result.returncode == 0, result.stderr
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists() and group_members(pid)] == []
    assert all(group_members(pid) == [] for pid in pids)
    assert processes_referencing(state_dir) == {}
    assert processes_with_airflow_home(state_dir / "airflow") == {}
    assert [port for port in ports if is_port_in_use(port)] == []
    assert {s["state"] for s in status(state_dir).values()} == {"stopped"}

    result = eo_stack("up", "--state-dir", str(state_dir))
    assert result.returncode == 0, result.stderr
    assert exported_env(state_dir) == env  # same ports, same password
    assert (state_dir / "airflow" / "login.json").read_text() == login  # same Airflow URL and login
    assert [s["healthy"] for s in status(state_dir).values()] == [True] * 9
    # The registry stores in memory: it comes back empty, with the compatibility set again.
    registry_url = status(state_dir)["schema-registry"]["url"]
    with urllib.request.urlopen(f"{registry_url}/config", timeout=10) as response:
        assert json.loads(response.read()) == {"compatibilityLevel": "BACKWARD"}
    assert consume_range(bootstrap, topic, 1, 0, 50) == [(i, k, v) for i, (k, v) in enumerate(records)]
    connection = happybase.Connection(hbase["host"], hbase["port"])
    try:
        assert connection.table(table).cells(b"row1", b"cf:a", include_timestamp=True) == [(b"1", 42)]
    finally:
        connection.close()
