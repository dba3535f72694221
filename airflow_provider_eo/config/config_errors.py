"""The errors of pipeline loading (see :mod:`airflow_provider_eo.errors` for the taxonomy)."""

from __future__ import annotations

from collections.abc import Iterable

from airflow_provider_eo.errors import ConfigError


class PipelineConfigError(ConfigError, ValueError):
    """A pipelines file is missing, unreadable or invalid.

    The message names the file, the pipeline (when known) and the field (a dotted
    path such as ``caps.max_records_total``) followed by the problem, e.g.
    ``dags/pipelines.yaml: pipeline 'orders': field 'caps.max_records_total': must be
    an integer >= 1, got 0``.
    """

    def __init__(self, file: str, pipeline: str | None, field: str | None, problem: str) -> None:
        self.file = file
        self.pipeline = pipeline
        self.field = field
        self.problem = problem
        where = [file]
        if pipeline is not None:
            where.append(f"pipeline {pipeline!r}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(": ".join([*where, problem]))


class PipelineNotDeclared(PipelineConfigError, LookupError):
    """The pipelines file declares no pipeline of that name.

    The message names the file, the pipeline and the declared names, e.g.
    ``dags/pipelines.yaml: pipeline 'nope': pipeline not declared (declared: orders, users)``;
    ``declared`` holds the declared names, sorted.
    """

    def __init__(self, file: str, pipeline: str, declared: Iterable[str]) -> None:
        self.declared = sorted(declared)
        known = ", ".join(self.declared) or "none"
        super().__init__(file, pipeline, None, f"pipeline not declared (declared: {known})")
