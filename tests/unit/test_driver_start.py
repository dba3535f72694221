"""The write step's start-up settings and the driver's class-data archive (real files, no Spark)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from airflow_provider_eo.operators import driver_start
from airflow_provider_eo.operators.driver_class_archive import (
    UNUSED_DAYS,
    DriverClassArchive,
    installation_digest,
)
from airflow_provider_eo.operators.driver_start import DRIVER_JAVA_OPTIONS, WORKER_DAEMON, start_up_conf
from airflow_provider_eo.spark.driver.driver_jvm import class_archive_in_use


def partial_of(conf: dict[str, str]) -> Path:
    """The partial file named by ``-XX:ArchiveClassesAtExit=`` in the driver's options."""
    option = conf["spark.driver.extraJavaOptions"].split()[-1]
    assert option.startswith("-XX:ArchiveClassesAtExit="), option
    return Path(option.split("=", 1)[1])


def test_a_pipeline_that_sets_nothing_gets_every_setting_and_records_the_archive(tmp_path: Path) -> None:
    archive = DriverClassArchive(tmp_path / "archives", "abc")
    conf = start_up_conf({}, master="local[2]", deploy_mode="client", archive=archive)
    partial = partial_of(conf)
    assert conf == {
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": f"{DRIVER_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={partial}",
        "spark.python.daemon.module": WORKER_DAEMON,
    }
    assert partial.parent == tmp_path / "archives"
    assert partial.name.startswith("spark-driver-abc.jsa.") and partial.name.endswith(".partial")


def test_an_existing_archive_is_mapped_and_touched(tmp_path: Path) -> None:
    archive = DriverClassArchive(tmp_path, "abc")
    archive.path.write_bytes(b"archive")
    os.utime(archive.path, (1, 1))
    conf = start_up_conf({}, master="local[*]", deploy_mode="client", archive=archive)
    java = conf["spark.driver.extraJavaOptions"]
    assert java == f"{DRIVER_JAVA_OPTIONS} -XX:SharedArchiveFile={archive.path}"
    assert archive.path.stat().st_mtime > time.time() - 60  # in use: not pruned


@pytest.mark.parametrize(
    "key", ["spark.ui.enabled", "spark.driver.extraJavaOptions", "spark.python.daemon.module"]
)
def test_a_key_the_pipeline_sets_is_left_to_it(tmp_path: Path, key: str) -> None:
    archive = DriverClassArchive(tmp_path, "abc")
    conf = start_up_conf({key: "mine"}, master="local[2]", deploy_mode="client", archive=archive)
    assert key not in conf
    assert len(conf) == 2
    if key == "spark.driver.extraJavaOptions":
        assert list(tmp_path.iterdir()) == []  # not recorded: the driver's options are the pipeline's


def test_cluster_mode_only_turns_the_ui_off(tmp_path: Path) -> None:
    archive = DriverClassArchive(tmp_path / "archives", "abc")
    conf = start_up_conf({}, master="yarn", deploy_mode="cluster", archive=archive)
    assert conf == {"spark.ui.enabled": "false"}
    assert not (tmp_path / "archives").exists()


def test_a_cluster_master_runs_sparks_own_worker_daemon(tmp_path: Path) -> None:
    conf = start_up_conf({}, master="spark://m:7077", deploy_mode="client", archive=None)
    assert conf == {"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS}


def test_a_successful_first_run_installs_the_archive_and_prunes_unused_ones(tmp_path: Path) -> None:
    stale, recent = tmp_path / "spark-driver-old.jsa", tmp_path / "spark-driver-other.jsa"
    for other in (stale, recent):
        other.write_bytes(b"x")
    old = time.time() - (UNUSED_DAYS + 1) * 86400
    os.utime(stale, (old, old))
    archive = DriverClassArchive(tmp_path, "abc")
    partial = partial_of(start_up_conf({}, master="local", deploy_mode="client", archive=archive))
    partial.write_bytes(b"written by the JVM at exit")
    archive.settle(succeeded=True)
    assert archive.path.read_bytes() == b"written by the JVM at exit"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark-driver-abc.jsa", "spark-driver-other.jsa"]


def test_a_failed_first_run_leaves_no_archive(tmp_path: Path) -> None:
    archive = DriverClassArchive(tmp_path, "abc")
    partial = partial_of(start_up_conf({}, master="local", deploy_mode="client", archive=archive))
    partial.write_bytes(b"x")
    archive.settle(succeeded=False)
    assert list(tmp_path.iterdir()) == []


def test_an_unusable_directory_leaves_the_archive_out(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    archive = DriverClassArchive(tmp_path / "file" / "archives", "abc")
    conf = start_up_conf({}, master="local", deploy_mode="client", archive=archive)
    assert conf["spark.driver.extraJavaOptions"] == DRIVER_JAVA_OPTIONS
    archive.settle(succeeded=True)  # nothing recorded, nothing to settle
    assert (tmp_path / "file").read_text() == "not a directory"


def test_the_digest_follows_the_jdk_and_the_spark_jars(tmp_path: Path) -> None:
    jdk, spark = tmp_path / "jdk", tmp_path / "spark"
    (spark / "jars").mkdir(parents=True)
    jdk.mkdir()
    (jdk / "release").write_text('JAVA_VERSION="17.0.15"\n')
    (spark / "jars" / "spark-core.jar").write_bytes(b"1")
    first = installation_digest(jdk, spark)
    assert installation_digest(jdk, spark) == first
    (spark / "jars" / "spark-core.jar").write_bytes(b"12")
    second = installation_digest(jdk, spark)
    (jdk / "release").write_text('JAVA_VERSION="17.0.16"\n')
    assert len({first, second, installation_digest(jdk, spark)}) == 3


def test_the_archive_directory_comes_from_the_eo_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW__EO__SPARK_CLASS_ARCHIVE_DIR", str(tmp_path))
    archive = driver_start.class_archive()
    assert archive is not None and archive.directory == tmp_path
    monkeypatch.setenv("AIRFLOW__EO__SPARK_CLASS_ARCHIVE_DIR", "")
    assert driver_start.class_archive() is None


def test_a_submission_keeps_a_recorded_archive_only_when_it_succeeded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW__EO__SPARK_CLASS_ARCHIVE_DIR", str(tmp_path))
    failing = driver_start.submission_conf({}, master="local", deploy_mode="client")
    with pytest.raises(RuntimeError, match="spark-submit failed"), failing as conf:
        partial_of(conf).write_bytes(b"dump of a failed run")
        raise RuntimeError("spark-submit failed")
    assert list(tmp_path.iterdir()) == []  # the failed run's recording is dropped
    with driver_start.submission_conf(
        {"spark.ui.enabled": "true"}, master="local", deploy_mode="client"
    ) as conf:
        assert conf["spark.ui.enabled"] == "true"  # the pipeline's own setting stays
        partial = partial_of(conf)
        partial.write_bytes(b"dump")
    archives = list(tmp_path.iterdir())
    assert [p.suffix for p in archives] == [".jsa"] and archives[0] != partial


def test_the_archive_in_use_is_read_from_the_memory_map() -> None:
    assert class_archive_in_use(os.getpid()) is None  # python maps no class archive
    assert class_archive_in_use(2**22 + 7) is None  # no such process
