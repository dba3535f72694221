"""One pipeline by name: the single "pipeline not declared" error, and the DAG template's file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from airflow_provider_eo.config import (
    PipelineConfigError,
    PipelineNotDeclared,
    load_pipeline,
    parse_pipelines_text,
    select_pipeline,
)
from airflow_provider_eo.errors import ConfigError

REPO_DAGS = Path(__file__).resolve().parents[2] / "dags"


def _write(path: Path, *names: str) -> Path:
    entries = [{"name": name, "topics": [name], "hbase": {"table": f"{name}_t"}} for name in names]
    path.write_text(yaml.safe_dump({"pipelines": entries}))
    return path


def test_load_pipeline_returns_the_named_spec(tmp_path: Path) -> None:
    file = _write(tmp_path / "p.yaml", "users", "orders")
    assert (load_pipeline("orders", file).hbase_table, load_pipeline("users", str(file)).name) == (
        "orders_t", "users"
    )  # fmt: skip


def test_undeclared_pipeline_names_file_pipeline_and_declared_names(tmp_path: Path) -> None:
    file = _write(tmp_path / "p.yaml", "users", "orders")
    with pytest.raises(PipelineNotDeclared) as info:
        load_pipeline("nope", file)
    error = info.value
    assert str(error) == f"{file}: pipeline 'nope': pipeline not declared (declared: orders, users)"
    assert (error.file, error.pipeline, error.declared) == (str(file), "nope", ["orders", "users"])
    # every caller's old ``except`` still catches it
    assert all(
        isinstance(error, base) for base in (PipelineConfigError, ConfigError, ValueError, LookupError)
    )


def test_select_pipeline_in_an_empty_declaration() -> None:
    specs = parse_pipelines_text("pipelines: []", "inline")
    with pytest.raises(
        PipelineNotDeclared, match=r"^inline: pipeline 'x': pipeline not declared \(declared: none\)$"
    ):
        select_pipeline(specs, "x", "inline")


def test_the_dag_templates_folder_provides_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EO_PIPELINES_FILE", raising=False)
    spec = load_pipeline("demo_events", default_dir=REPO_DAGS)
    assert spec.source_file == str(REPO_DAGS / "pipelines.yaml")
    with pytest.raises(PipelineConfigError) as info:
        load_pipeline("demo_events")
    assert str(info.value) == "pipelines file: not given: pass its path or set EO_PIPELINES_FILE"
