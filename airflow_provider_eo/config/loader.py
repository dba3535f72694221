"""Locating and loading the pipelines YAML file.

File layout::

    pipelines:
      - name: orders
        topics: [orders]
        hbase: {table: orders}

Resolution of the file (first match wins): the ``path`` argument; the environment
variable ``EO_PIPELINES_FILE``; ``pipelines.yaml`` inside ``default_dir`` (the DAG
template passes its own directory). Nothing else is guessed: with none of the three,
``PipelineConfigError`` says to pass the path or set ``EO_PIPELINES_FILE``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from airflow_provider_eo.config.config_errors import PipelineConfigError, PipelineNotDeclared
from airflow_provider_eo.config.parsing import MAX_NAME_LENGTH, NAME_RE, parse_pipeline
from airflow_provider_eo.config.section import Section
from airflow_provider_eo.config.specs import PipelineSpec

PIPELINES_FILE_ENV = "EO_PIPELINES_FILE"
#: One parsed pipeline spec (``PipelineSpec.to_dict`` as JSON), as the write operator hands
#: the spec its task run uses to the write application.
PIPELINE_SPEC_ENV = "EO_PIPELINE_SPEC"
DEFAULT_FILE_NAME = "pipelines.yaml"


def resolve_pipelines_file(path: str | Path | None = None, *, default_dir: str | Path | None = None) -> Path:
    """The pipelines file to read, following the resolution order of this module.

    The file is not opened here. Raises ``PipelineConfigError`` when neither ``path``,
    ``EO_PIPELINES_FILE`` nor ``default_dir`` is given.
    """
    if path is not None:
        return Path(path)
    from_env = os.environ.get(PIPELINES_FILE_ENV)
    if from_env:
        return Path(from_env)
    if default_dir is not None:
        return Path(default_dir) / DEFAULT_FILE_NAME
    raise PipelineConfigError(
        "pipelines file", None, None, f"not given: pass its path or set {PIPELINES_FILE_ENV}"
    )


def load_pipelines(
    path: str | Path | None = None, *, default_dir: str | Path | None = None
) -> dict[str, PipelineSpec]:
    """Load and validate every pipeline of the file, keyed by name (file order).

    Raises ``PipelineConfigError`` naming file, pipeline and field on the first problem:
    missing/unreadable file, invalid YAML, unknown keys, wrong types or values,
    duplicate pipeline names.
    """
    file = resolve_pipelines_file(path, default_dir=default_dir)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        problem = f"cannot read pipelines file: {exc.strerror}"
        raise PipelineConfigError(str(file), None, None, problem) from exc
    return parse_pipelines_text(text, str(file))


def load_pipeline(
    name: str, path: str | Path | None = None, *, default_dir: str | Path | None = None
) -> PipelineSpec:
    """The spec of pipeline ``name`` from the resolved pipelines file.

    Raises ``PipelineNotDeclared`` (naming the file, ``name`` and the declared names)
    when the file has no such pipeline, and ``PipelineConfigError`` for any problem of
    :func:`load_pipelines`.
    """
    file = resolve_pipelines_file(path, default_dir=default_dir)
    return select_pipeline(load_pipelines(file), name, str(file))


def select_pipeline(specs: Mapping[str, PipelineSpec], name: str, file: str) -> PipelineSpec:
    """``specs[name]``, or ``PipelineNotDeclared`` naming ``file``, ``name`` and ``specs``' names."""
    spec = specs.get(name)
    if spec is None:
        raise PipelineNotDeclared(file, name, specs)
    return spec


def parse_pipelines_text(text: str, file: str) -> dict[str, PipelineSpec]:
    """Validate pipelines YAML given as text; ``file`` is only used in error messages."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PipelineConfigError(file, None, None, f"invalid YAML: {exc}") from exc
    if document is None:
        raise PipelineConfigError(file, None, None, "is empty (expected a mapping with key 'pipelines')")
    top = Section(document, file=file, pipeline=None)
    entries = top.raw("pipelines")
    top.finish()
    if not isinstance(entries, list):
        top.fail("pipelines", f"must be a list of pipelines, got {type(entries).__name__}")
    specs: dict[str, PipelineSpec] = {}
    for index, entry in enumerate(entries):
        name = _pipeline_name(top, index, entry)
        if name in specs:
            raise PipelineConfigError(file, name, "name", "is declared more than once")
        specs[name] = parse_pipeline(Section(entry, file=file, pipeline=name))
    return specs


def _pipeline_name(top: Section, index: int, entry: object) -> str:
    if not isinstance(entry, dict):
        top.fail(f"pipelines[{index}]", f"must be a mapping, got {type(entry).__name__}")
    name = entry.get("name")
    if name is None:
        top.fail(f"pipelines[{index}].name", "is required")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        top.fail(
            f"pipelines[{index}].name",
            f"must match {NAME_RE.pattern} (letters, digits, '_', '.', '-'), got {name!r}",
        )
    if len(name) > MAX_NAME_LENGTH:
        top.fail(
            f"pipelines[{index}].name",
            f"must be at most {MAX_NAME_LENGTH} characters (it is part of DAG ids), got {len(name)}",
        )
    return name
