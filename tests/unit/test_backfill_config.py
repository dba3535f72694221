"""The pipelines YAML's ``backfill`` section: defaults and every invalid case's exact message."""

# ruff: noqa: E501  (the table below holds exact one-line error messages)

from __future__ import annotations

import pytest
import yaml

from airflow_provider_eo.config import PipelineConfigError, parse_pipelines_text
from airflow_provider_eo.config.specs import BackfillSpec

P = "p.yaml: pipeline 'orders': "


def parse(backfill: object) -> BackfillSpec:
    entry = {"name": "orders", "topics": ["orders"], "hbase": {"table": "orders"}, "backfill": backfill}
    return parse_pipelines_text(yaml.safe_dump({"pipelines": [entry]}), "p.yaml")["orders"].backfill


def test_defaults_and_values() -> None:
    assert parse(None) == parse({}) == BackfillSpec("@daily", None, 1)
    assert parse({"schedule": None}) == BackfillSpec("@daily", None, 1)  # null is the default
    assert parse({"schedule": "15 */6 * * *", "max_records_per_epoch": 5000, "max_parallel_chunks": 2}) == (
        BackfillSpec("15 */6 * * *", 5000, 2)
    )
    assert parse({"schedule": "@hourly"}).schedule == "@hourly"


@pytest.mark.parametrize(
    ("backfill", "message"),
    [
        ({"schedule": "@once"}, "must be periodic (a cron expression or a preset with intervals), got '@once'"),
        ({"schedule": "@continuous"}, "must be periodic (a cron expression or a preset with intervals), got '@continuous'"),
        ({"schedule": "@sometimes"}, "unknown preset '@sometimes' (known: @once, @continuous, @hourly, @daily, @weekly, @monthly, @quarterly, @yearly, @annually)"),
        ({"schedule": "* *"}, "must be a cron expression with 5 fields or a preset, got '* *'"),
        ({"schedule": 5}, "must be a cron expression, a preset or null, got 5"),
        ({"max_records_per_epoch": 0}, "must be an integer >= 1, got 0"),
        ({"max_parallel_chunks": 0}, "must be an integer >= 1, got 0"),
        ({"chunk": 3}, "unknown key (allowed here: max_parallel_chunks, max_records_per_epoch, schedule)"),
    ],
)  # fmt: skip
def test_invalid_values_name_the_field(backfill: dict, message: str) -> None:
    field = next(iter(backfill))
    with pytest.raises(PipelineConfigError) as info:
        parse(backfill)
    assert str(info.value) == f"{P}field 'backfill.{field}': {message}"
