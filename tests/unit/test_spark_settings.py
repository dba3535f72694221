"""Driver settings (the pipeline from a file or EO_PIPELINE_SPEC, connections from env), the py-files zip."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from airflow_provider_eo.config import (
    MappingSpec,
    PipelineConfigError,
    PipelineNotDeclared,
    parse_pipelines_text,
)
from airflow_provider_eo.config.loader import PIPELINE_SPEC_ENV
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.spark.driver.application import actor_of, parse_args
from airflow_provider_eo.spark.driver.task_settings import run_pipeline_spec, task_settings
from airflow_provider_eo.spark.package_zip import build_zip

YAML = """
pipelines:
  - name: users
    topics: [users]
    hbase: {table: users_t, column_family: u}
    mapping: {row_key: "{id}:{region}", max_record_bytes: 512}
    bad_records: dead_letter
    batch_size: 7
    spark: {split_size: 50}
"""

ENV = {
    "AIRFLOW_CONN_EO_LEDGER": "postgresql://eo:s3cr%40t@db.example:5433/ledger",
    "AIRFLOW_CONN_EO_KAFKA": json.dumps(
        {
            "conn_type": "kafka",
            "extra": {"bootstrap.servers": "k:9092", "sasl.password": "kpw", "eo.timeout.ms": 4000},
        }
    ),
    "AIRFLOW_CONN_EO_HBASE": json.dumps(
        {
            "conn_type": "hbase",
            "host": "hb",
            "port": 9091,
            "extra": {"table_prefix": "pre", "servers": "hb2:9092"},
        }
    ),
}


SPEC = json.dumps(parse_pipelines_text(YAML, "p.yaml")["users"].to_dict())


def test_pipeline_from_the_shipped_spec_and_from_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PIPELINE_SPEC_ENV, SPEC)
    assert (
        run_pipeline_spec("users") == parse_pipelines_text(YAML, "p.yaml")["users"]
    )  # the same spec, not re-read
    path = tmp_path / "p.yaml"
    path.write_text(YAML.replace("users_t", "from_file"))
    assert run_pipeline_spec("users", str(path)).hbase_table == "from_file"  # an explicit file wins
    with pytest.raises(PipelineNotDeclared) as info:
        run_pipeline_spec("nope")
    assert str(info.value) == "$EO_PIPELINE_SPEC: pipeline 'nope': pipeline not declared (declared: users)"
    with pytest.raises(PipelineNotDeclared) as info:
        run_pipeline_spec("nope", str(path))
    assert str(info.value) == f"{path}: pipeline 'nope': pipeline not declared (declared: users)"


def test_task_settings_resolve_connections_from_env_and_hide_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PIPELINE_SPEC_ENV, SPEC)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    settings = task_settings(run_pipeline_spec("users"), 12)
    assert (settings.pipeline, settings.epoch_id, settings.hbase_table, settings.column_family) == (
        "users", 12, "users_t", "u"
    )  # fmt: skip
    assert settings.mapping == MappingSpec(row_key="{id}:{region}", max_record_bytes=512)
    assert (settings.bad_records, settings.batch_size) == ("dead_letter", 7)
    assert (settings.batch_bytes, settings.hbase_keyvalue_maxsize) == (4_194_304, 10_485_760)
    assert settings.kafka_config == {
        "bootstrap.servers": "k:9092",
        "sasl.password": "kpw",
        "reconnect.backoff.ms": "10",
    }
    assert settings.read_timeout_s == 4.0
    assert (settings.hbase_kwargs["host"], settings.hbase_kwargs["port"]) == ("hb", 9091)
    assert settings.hbase_kwargs["table_prefix"] == "pre"
    assert settings.hbase_servers == (("hb", 9091), ("hb2", 9092))  # host/port first
    assert "s3cr@t" in settings.ledger_dsn
    assert "s3cr@t" not in repr(settings) and "kpw" not in repr(settings)


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (
            {"receive.message.max.bytes": 1000},
            "512 does not fit in the Kafka connection's receive.message.max.bytes (1000, of which 512 "
            "bytes are protocol overhead): such records could never be fetched; raise "
            "receive.message.max.bytes in the connection's extra, or lower mapping.max_record_bytes",
        ),
        (
            {"receive.message.max.bytes": "lots"},
            "the Kafka connection's fetch sizes: invalid literal for int()",
        ),
    ],
)
def test_a_kafka_connection_that_cannot_fetch_the_largest_record_is_refused_naming_both_fields(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, object], problem: str
) -> None:
    monkeypatch.setenv(PIPELINE_SPEC_ENV, SPEC)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    kafka = {"conn_type": "kafka", "extra": {"bootstrap.servers": "k:9092", **extra}}
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", json.dumps(kafka))
    with pytest.raises(PipelineConfigError) as info:
        task_settings(run_pipeline_spec("users"), 12)
    assert (info.value.pipeline, info.value.field) == ("users", "mapping.max_record_bytes")
    assert info.value.problem.startswith(problem)
    fits = {"receive.message.max.bytes": 1024, "fetch.max.bytes": 512}  # 512 + 512 overhead
    kafka["extra"] = {"bootstrap.servers": "k", **fits}
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", json.dumps(kafka))
    assert task_settings(run_pipeline_spec("users"), 12).kafka_config["receive.message.max.bytes"] == "1024"


def test_arguments_are_names_and_ids_only() -> None:
    args = parse_args(["--pipeline", "users", "--epoch-id", "3"])
    assert vars(args) == {
        "pipeline": "users",
        "epoch_id": 3,
        "pipelines_file": None,
        "fencing_token": None,
        "ledger_conn_id": "eo_ledger",
        "kafka_conn_id": "eo_kafka",
        "hbase_conn_id": "eo_hbase",
        "schema_registry_conn_id": "schema_registry",
        "actor_kind": "task",
        "actor": None,
        "driver_env_file": None,
    }
    assert actor_of(args) == Actor.process()  # no --actor: the driver's process votes
    named = parse_args(["--pipeline", "u", "--epoch-id", "3", "--actor", "d/r/write try 2"])
    assert actor_of(named) == Actor.task("d", "r", "write", 2)


def test_py_files_zip_is_importable_and_reproducible(tmp_path: Path) -> None:
    first = build_zip(tmp_path / "a" / "eo.zip")
    second = build_zip(tmp_path / "b.zip")
    assert first.read_bytes() == second.read_bytes()
    archive = zipfile.ZipFile(first)
    names = archive.namelist()
    assert "airflow_provider_eo/spark/driver/application.py" in names
    assert "airflow_provider_eo/ledger/store/migrations/0001_initial.sql" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # Only the provider ships: no local stack, demo or fault (kill/hang) machinery.
    assert {n.split("/")[0] for n in names} == {"airflow_provider_eo"}
    shipped = {n.split("/")[1] for n in names}
    assert not shipped & {"devstack", "demo", "faults.py"}
    assert not [n for n in names if b"SIGKILL" in archive.read(n)]
    probe = "import airflow_provider_eo.spark.hbase_sink.segments as s; print(s.__file__)"
    out = subprocess.run(
        [sys.executable, "-S", "-c", f"import sys; sys.path.insert(0, {str(first)!r}); {probe}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == f"{first}/airflow_provider_eo/spark/hbase_sink/segments.py"
