"""``spark.mode`` and ``spark.connect_conn_id`` in the pipelines YAML, the session job's tag and
the provider zip a session ships (pure: no Spark, no services)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import pytest

import airflow_provider_eo
from airflow_provider_eo.config import parse_pipelines_text
from airflow_provider_eo.config.config_errors import PipelineConfigError
from airflow_provider_eo.config.spec_digest import spec_digest
from airflow_provider_eo.spark.session.connect_tasks import job_tag, metrics_batch
from airflow_provider_eo.spark.session.executor_package import (
    INSTALLED,
    PackageCacheUnsafe,
    client_identity,
    executor_identity,
    is_complete_package,
    package_cache_dir,
    session_package,
)
from airflow_provider_eo.spark.session.session_write import (
    ConnectServerUnreachable,
    check_reachable,
    credentials_session_id,
    with_session_id,
)

BASE = "pipelines:\n- name: p\n  topics: [t]\n  hbase: {table: t}\n"


def spec_of(spark: str):
    return parse_pipelines_text(BASE + "  spark:\n" + spark, "inline.yaml")["p"]


def test_mode_defaults_to_submit_and_session_takes_a_connection_id() -> None:
    plain = parse_pipelines_text(BASE, "inline.yaml")["p"]
    assert (plain.spark.mode, plain.spark.connect_conn_id) == ("submit", "spark_connect")
    session = spec_of("    mode: session\n    connect_conn_id: team_connect\n")
    assert (session.spark.mode, session.spark.connect_conn_id) == ("session", "team_connect")
    assert spec_digest(session) == spec_digest(plain)  # how a range is written, not what lands


@pytest.mark.parametrize(
    ("spark", "field", "problem"),
    [
        ("    mode: sesion\n", "spark.mode", "must be one of submit, session, got 'sesion'"),
        ("    mode: session\n    master: local[2]\n", "spark.master", "is the Spark Connect server's"),
        ("    mode: session\n    deploy_mode: cluster\n", "spark.deploy_mode", "must be 'client'"),
        ("    mode: session\n    resources: {driver_memory: 1g}\n", "spark.resources", "are the Spark"),
        ("    mode: session\n    conf: {spark.x: '1'}\n", "spark.conf", "no session-wide settings"),
    ],
)
def test_settings_the_server_owns_are_refused_in_session_mode(spark: str, field: str, problem: str) -> None:
    with pytest.raises(PipelineConfigError) as refused:
        spec_of(spark)
    assert (refused.value.file, refused.value.pipeline, refused.value.field) == ("inline.yaml", "p", field)
    assert problem in refused.value.problem


def test_a_job_tag_names_the_pipeline_the_epoch_and_the_try() -> None:
    assert job_tag("orders", 42, 3) == "eo-orders-epoch-42-try-3"
    assert job_tag("orders", 42, None) == "eo-orders-epoch-42-try-0"


def test_a_metrics_batch_holds_the_strings_in_the_jobs_schema() -> None:
    batch = metrics_batch(['{"range": 1}', "", "zürich ✓"])
    assert str(batch.schema) == "metrics: string"
    assert batch.column(0).to_pylist() == ['{"range": 1}', "", "zürich ✓"]
    assert metrics_batch([]).num_rows == 0


def test_a_metrics_batch_does_not_import_pandas() -> None:
    """pyarrow's constructors from Python objects import pandas (about 40 MB per Python worker)."""
    probe = (
        "import sys\n"
        "from airflow_provider_eo.spark.session.connect_tasks import metrics_batch\n"
        "metrics_batch(['{}'])\n"
        "assert 'pyarrow' in sys.modules and 'pandas' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True)


def test_the_session_zip_carries_the_package_and_its_identity() -> None:
    identity = client_identity()
    path = session_package()
    assert path.name == f"airflow_provider_eo-{identity.version}-{identity.digest[:12]}.zip"
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        stored = json.loads(archive.read("airflow_provider_eo/package_identity.json"))
    assert "airflow_provider_eo/spark/session/connect_tasks.py" in names
    assert stored == {"version": airflow_provider_eo.__version__, "digest": identity.digest}
    # this process imported the source tree, not a zip: an installed copy, checked by version only
    assert executor_identity().digest == INSTALLED


PACKAGE_OF_A_NEW_PROCESS = (
    "from airflow_provider_eo.spark.session.executor_package import session_package; print(session_package())"
)


def test_every_write_process_reuses_one_built_zip_per_provider_copy(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    paths = [
        subprocess.run(
            [sys.executable, "-c", PACKAGE_OF_A_NEW_PROCESS],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        for _ in range(2)
    ]
    cache = tmp_path / f"eo-session-package-{os.getuid()}"
    identity = client_identity()
    name = f"airflow_provider_eo-{identity.version}-{identity.digest[:12]}.zip"
    assert paths == [str(cache / name)] * 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache.name]  # no directory per process
    assert [p.name for p in cache.iterdir()] == [name]  # no partial file left
    assert cache.stat().st_mode & 0o777 == 0o700


def test_a_cached_zip_cut_short_is_built_again_and_threads_build_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    identity = client_identity()
    cache = package_cache_dir()
    target = cache / f"airflow_provider_eo-{identity.version}-{identity.digest[:12]}.zip"
    with zipfile.ZipFile(target, "w") as broken:  # what two unlocked builders once left behind
        broken.writestr("airflow_provider_eo/package_identity.json", json.dumps(asdict(identity)))
    assert not is_complete_package(target, identity)
    session_package.cache_clear()
    try:
        with ThreadPoolExecutor(8) as pool:
            paths = set(pool.map(lambda _: session_package(), range(8)))
    finally:
        session_package.cache_clear()
    assert paths == {target}
    assert is_complete_package(target, identity)
    with zipfile.ZipFile(target) as archive:
        assert "airflow_provider_eo/spark/session/connect_tasks.py" in archive.namelist()
    assert [p.name for p in cache.iterdir()] == [target.name]  # no partial file left


def test_a_package_cache_others_can_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shared = tmp_path / f"eo-session-package-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(PackageCacheUnsafe) as refused:
        package_cache_dir()
    assert str(refused.value).startswith(f"{shared}: the session package cache must be a directory owned by")
    assert "mode drwxrwxrwx" in str(refused.value)


def test_the_session_id_follows_the_credentials_not_the_pipeline() -> None:
    connections = {"AIRFLOW_CONN_EO_LEDGER": "postgres://eo:secret@h/eo", "AIRFLOW_CONN_EO_KAFKA": "{}"}
    first = credentials_session_id(connections)
    assert first == credentials_session_id(dict(reversed(list(connections.items()))))
    assert str(uuid.UUID(first)) == first
    rotated = {**connections, "AIRFLOW_CONN_EO_LEDGER": "postgres://eo:other@h/eo"}
    other_kafka = {**connections, "AIRFLOW_CONN_EO_KAFKA": '{"bootstrap.servers": "b:9092"}'}
    assert len({first, credentials_session_id(rotated), credentials_session_id(other_kafka)}) == 3


def test_the_session_id_joins_the_connections_url() -> None:
    sid = "6c4c3a3e-1d1f-4f55-9a55-4bd7a8d3a001"
    assert with_session_id("sc://h:15002/", sid) == f"sc://h:15002/;session_id={sid}"
    assert with_session_id("sc://h:15002", sid) == f"sc://h:15002/;session_id={sid}"
    assert with_session_id("sc://h:15002/;token=t", sid) == f"sc://h:15002/;token=t;session_id={sid}"


def test_an_unreachable_server_is_refused_at_once_naming_the_address() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    with pytest.raises(ConnectServerUnreachable) as refused:
        check_reachable(f"sc://127.0.0.1:{port}/;token=t", "pipeline=p epoch_id=7 connection=spark_connect")
    message = str(refused.value)
    assert message.startswith(
        f"pipeline=p epoch_id=7 connection=spark_connect: the Spark Connect server at 127.0.0.1:{port} "
        "does not accept connections"
    )
    assert "token" not in message
