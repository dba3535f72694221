"""The single error type of pipeline loading."""

from __future__ import annotations


class PipelineConfigError(ValueError):
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
