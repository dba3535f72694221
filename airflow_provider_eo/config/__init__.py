"""Pipeline declarations: YAML -> validated, frozen :class:`PipelineSpec` objects."""

from __future__ import annotations

from airflow_provider_eo.config.config_errors import PipelineConfigError, PipelineNotDeclared
from airflow_provider_eo.config.loader import (
    PIPELINES_FILE_ENV,
    load_pipeline,
    load_pipelines,
    parse_pipelines_text,
    resolve_pipelines_file,
    select_pipeline,
)
from airflow_provider_eo.config.specs import (
    CapsSpec,
    MappingSpec,
    PipelineSpec,
    SparkResources,
    SparkSpec,
    StartingSpec,
    TimeoutsSpec,
)

__all__ = [
    "PIPELINES_FILE_ENV",
    "CapsSpec",
    "MappingSpec",
    "PipelineConfigError",
    "PipelineNotDeclared",
    "PipelineSpec",
    "SparkResources",
    "SparkSpec",
    "StartingSpec",
    "TimeoutsSpec",
    "load_pipeline",
    "load_pipelines",
    "parse_pipelines_text",
    "resolve_pipelines_file",
    "select_pipeline",
]
