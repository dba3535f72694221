"""``docker/`` for real: build every image from a debootstrapped Debian base, bring the compose
file up, run one stream epoch through the Airflow in the containers, check it exactly, ``down -v``.

Long mode only (``EO_FAULT_LONG=1``; about 13 min cold, see docker/README.md for the measured
figures): the build, 16 containers and the epoch do not fit the CI budget on 2 cores.

One module-scoped scenario (:func:`compose_run`): a private ``dockerd``
(:mod:`eo_devtools.docker_engine`, scratch under ``$EO_DOCKER_SCRATCH`` or
``/tmp/eo-docker/engine``, kept between runs so a warm build reuses its layers) builds
the images (:mod:`eo_devtools.docker_images`); a temporary copy of ``docker/`` and ``dags/``
gets a generated ``.env`` (random secrets, mode 0600; never on a command line), free host
ports, a pipelines file serving one small JSON pipeline, and an override file publishing
PostgreSQL on loopback so the test reads the ledger. Records go to a 2-partition topic
through Kafka's host listener; the stream DAG is triggered through the Airflow REST API.
Afterwards: ``docker-compose down -v`` and the engine stopped by its pid (bridge and
iptables rules removed). ``$scratch/compose-logs.txt`` keeps every service's log tail.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import happybase
import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.dags.factory import stream_dag_id
from airflow_provider_eo.ledger import EpochKind, EpochState, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from eo_devtools.demo.sample_events import produce_records
from eo_devtools.docker_engine import COMPOSE, DOCKER, PrivateDockerd
from eo_devtools.docker_images import DEFAULT_BASE, REPO, build_base, build_images, stage_context
from eo_devtools.stack.airflow_api import AirflowClient

pytestmark = [pytest.mark.long_faults, pytest.mark.integration]

PIPELINE = "docker_smoke"
TOPIC = "eo_docker_smoke"
TABLE = "docker_smoke"
GROUP = "eo-docker-smoke"
PARTITIONS = 2
PROJECT = "eo-docker-test"
#: (key, JSON value or None for a tombstone), in production order
EVENTS: list[tuple[bytes, bytes | None]] = [
    (b"k1", b'{"v": "1"}'),
    (b"k2", b'{"v": "2", "n": "x"}'),
    (b"k3", b'{"v": "3"}'),
    (b"k4", b'{"v": "4"}'),
    (b"k3", None),
]
PIPELINES = {
    "pipelines": [
        {
            "name": PIPELINE,
            "topics": [TOPIC],
            "group_id": GROUP,
            "hbase": {"table": TABLE, "column_family": "d"},
            "mapping": {"row_key": "kafka_key"},
            "starting": {"policy": "earliest"},
            "bad_records": "fail",
            "on_data_loss": "fail",
            "spark": {"split_size": 400, "conf": {"spark.ui.enabled": "false"}},
            "schedule": None,
            "batch_size": 500,
        }
    ]
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ComposeRun:
    """What the scenario saw; the tests assert on it."""

    produced: list[Any]
    run_id: str
    run_state: str
    cells: dict[bytes, dict[bytes, tuple[bytes, int]]]
    epochs: list[Any]
    cursors: dict[tuple[str, int], int]
    group: dict[tuple[str, int], int]
    seconds: dict[str, float]


class Compose:
    """docker-compose v1 on the private engine for the project copy in ``root``."""

    def __init__(self, engine: PrivateDockerd, root: Path) -> None:
        self.engine = engine
        self.files = [
            "-f",
            str(root / "docker/docker-compose.yml"),
            "-f",
            str(root / "docker/test-override.yml"),
        ]

    def run(self, *args: str, timeout: float = 1800) -> str:
        argv = [COMPOSE, "-p", PROJECT, *self.files, *args]
        done = subprocess.run(
            argv, env=self.engine.env(), capture_output=True, text=True, timeout=timeout, check=False
        )
        assert done.returncode == 0, (
            f"docker-compose {' '.join(args)}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
        return done.stdout

    def states(self) -> dict[str, tuple[str, str, int]]:
        """``{service: (status, health, exit code)}`` of every container of the project."""
        ids = self.run("ps", "-a", "-q").split()
        fmt = '{{index .Config.Labels "com.docker.compose.service"}} {{.State.Status}} '
        fmt += "{{if .State.Health}}{{.State.Health.Status}}{{else}}-{{end}} {{.State.ExitCode}}"
        out = subprocess.run([DOCKER, "inspect", "--format", fmt, *ids], env=self.engine.env(),
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        return {s: (st, h, int(c)) for s, st, h, c in (line.split() for line in out.splitlines())}

    def wait_ready(self, services: int, timeout: float = 1200) -> None:
        """Until every service runs healthy or (one-shots) exited 0; fails on an exit code."""
        deadline = time.monotonic() + timeout
        while True:
            states = self.states()
            failed = {s: v for s, v in states.items() if v[0] == "exited" and v[2] != 0}
            assert not failed, f"exited with an error: {failed}"
            ready = all(
                (st == "running" and h == "healthy") or st == "exited" for st, h, _ in states.values()
            )
            if ready and len(states) == services:
                return
            assert time.monotonic() < deadline, f"not ready in {timeout:.0f} s: {states}"
            time.sleep(5)


def write_project(root: Path) -> dict[str, Any]:
    """The temporary project copy: docker/, dags/ with this module's pipeline, .env (0600) and
    the override file; returns the host ports and the admin password."""
    shutil.copytree(REPO / "docker", root / "docker", ignore=shutil.ignore_patterns(".build", ".env"))
    (root / "dags").mkdir()
    shutil.copy2(REPO / "dags/eo_pipelines.py", root / "dags/eo_pipelines.py")
    (root / "dags/pipelines.yaml").write_text(yaml.safe_dump(PIPELINES, sort_keys=False))
    ports = {name: free_port() for name in ("airflow", "kafka", "thrift", "hbase_ui", "registry", "postgres")}
    env = {
        "AIRFLOW_DB_PASSWORD": secrets.token_urlsafe(24) + "%@:/",
        "EO_LEDGER_PASSWORD": secrets.token_urlsafe(24) + "#?&",
        "AIRFLOW_ADMIN_PASSWORD": secrets.token_urlsafe(24),
        "AIRFLOW_API_SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW_JWT_SECRET": secrets.token_urlsafe(32),
        "AIRFLOW_FERNET_KEY": _fernet_key(),
        "AIRFLOW_HOST_PORT": str(ports["airflow"]),
        "KAFKA_HOST_PORT": str(ports["kafka"]),
        "HBASE_THRIFT_HOST_PORT": str(ports["thrift"]),
        "HBASE_UI_HOST_PORT": str(ports["hbase_ui"]),
        "SCHEMA_REGISTRY_HOST_PORT": str(ports["registry"]),
    }
    env_file = root / "docker/.env"
    env_file.touch(mode=0o600)
    env_file.write_text("".join(f"{key}={value}\n" for key, value in env.items()))
    override = {"services": {"postgres": {"ports": [f"127.0.0.1:{ports['postgres']}:5432"]}}}
    (root / "docker/test-override.yml").write_text(yaml.safe_dump(override))
    return {
        **ports,
        "admin_password": env["AIRFLOW_ADMIN_PASSWORD"],
        "ledger_password": env["EO_LEDGER_PASSWORD"],
    }


def _fernet_key() -> str:
    import base64

    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


def service_count(root: Path) -> int:
    return len(yaml.safe_load((root / "docker/docker-compose.yml").read_text())["services"])


def scan_cells(port: int) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
    connection = happybase.Connection("127.0.0.1", port, timeout=30000)
    try:
        return {row: dict(cells) for row, cells in connection.table(TABLE).scan(include_timestamp=True)}
    finally:
        connection.close()


def committed(bootstrap: str, ends: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        answer = consumer.committed([TopicPartition(t, p) for t, p in sorted(ends)], timeout=30)
        return {(tp.topic, tp.partition): tp.offset for tp in answer}
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def compose_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeRun]:
    scratch = Path(os.environ.get("EO_DOCKER_SCRATCH", "/tmp/eo-docker/engine"))
    engine = PrivateDockerd(scratch)
    seconds: dict[str, float] = {}
    root = tmp_path_factory.mktemp("compose")
    compose = Compose(engine, root)
    started = time.monotonic()
    engine.start()
    try:
        base = os.environ.get("EO_DOCKER_BASE_IMAGE", DEFAULT_BASE)
        if base == DEFAULT_BASE:
            build_base(engine)
        stage_context()
        seconds.update({f"build {tag}": s for tag, s in build_images(engine, base).items()})
        seconds["build"] = round(time.monotonic() - started, 1)
        ports = write_project(root)
        started = time.monotonic()
        try:
            compose.run("up", "-d", "--no-build")
            compose.wait_ready(service_count(root))
            seconds["up"] = round(time.monotonic() - started, 1)
            yield scenario(ports, seconds)
        finally:
            argv = [COMPOSE, "-p", PROJECT, *compose.files, "logs", "--no-color", "--tail", "200"]
            logs = subprocess.run(argv, env=engine.env(), capture_output=True, text=True, check=False)
            (scratch / "compose-logs.txt").write_text(logs.stdout + logs.stderr)
            compose.run("down", "-v", "--remove-orphans")
    finally:
        engine.stop()
        (scratch / "compose-timings.json").write_text(json.dumps(seconds, indent=1))
        print(f"docker compose timings (s): {json.dumps(seconds)}")


def scenario(ports: dict[str, Any], seconds: dict[str, float]) -> ComposeRun:
    """Topic, records, one stream DAG run through the REST API, then what it left."""
    bootstrap = f"127.0.0.1:{ports['kafka']}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        future.result(60)
    produced = produce_records(bootstrap, TOPIC, PARTITIONS, iter(EVENTS))
    client = AirflowClient(f"http://127.0.0.1:{ports['airflow']}", "admin", ports["admin_password"])
    dag_id = stream_dag_id(PIPELINE)
    client.wait_for_dag(dag_id, timeout=600)
    client.unpause(dag_id)
    started = time.monotonic()
    run_id = client.trigger(dag_id)
    state = client.wait_for_run(dag_id, run_id, timeout=1200)
    seconds["epoch"] = round(time.monotonic() - started, 1)
    assert state == "success", (run_id, state, client.task_states(dag_id, run_id))
    ends: dict[tuple[str, int], int] = {}
    for record in produced:
        tp = (record.topic, record.partition)
        ends[tp] = max(ends.get(tp, 0), record.offset + 1)
    dsn = f"postgresql://eo:{quote(ports['ledger_password'], safe='')}@127.0.0.1:{ports['postgres']}/eo"
    with Ledger(dsn) as ledger:
        epochs = ledger.epochs(EpochFilter(pipeline=PIPELINE))
        cursors = ledger.cursors(PIPELINE)
    return ComposeRun(
        produced=produced,
        run_id=run_id,
        run_state=state,
        cells=scan_cells(ports["thrift"]),
        epochs=epochs,
        cursors=cursors,
        group=committed(bootstrap, ends),
        seconds=seconds,
    )


def last_offset(run: ComposeRun, key: bytes) -> int:
    """The version of a cell written by ``key``'s records: the offset of the last record of its
    write segment (docs/spark.md "Cell versions"); with 5 records and batch_size 500 each
    partition is one segment, so the last offset of the key's partition."""
    (partition,) = {r.partition for r in run.produced if r.key == key}
    return max(int(r.offset) for r in run.produced if r.partition == partition)


def test_the_epoch_wrote_exact_cells_with_offsets_as_versions(compose_run: ComposeRun) -> None:
    run = compose_run
    k1, k2, k4 = (last_offset(run, key) for key in (b"k1", b"k2", b"k4"))
    assert run.cells == {
        b"k1": {b"d:v": (b"1", k1)},
        b"k2": {b"d:v": (b"2", k2), b"d:n": (b"x", k2)},
        b"k4": {b"d:v": (b"4", k4)},
    }


def test_the_ledger_holds_one_committed_stream_epoch_and_the_group_its_ends(compose_run: ComposeRun) -> None:
    run = compose_run
    ends: dict[tuple[str, int], int] = {}
    for record in run.produced:
        ends[(record.topic, record.partition)] = max(
            ends.get((record.topic, record.partition), 0), record.offset + 1
        )
    assert [(e.kind, e.state, e.run_id, e.dag_id) for e in run.epochs] == [
        (EpochKind.STREAM, EpochState.COMMITTED, run.run_id, stream_dag_id(PIPELINE))
    ]
    (epoch,) = run.epochs
    assert [(r.topic, r.partition, r.start, r.end) for r in epoch.ranges] == [
        (t, p, 0, end) for (t, p), end in sorted(ends.items())
    ]
    assert epoch.record_count == len(EVENTS)
    assert run.cursors == ends
    assert run.group == ends
