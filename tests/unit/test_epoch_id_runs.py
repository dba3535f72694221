"""A window's epoch ids travel as runs: short for any number of consecutive epochs, read
back exactly, refused with the text named when malformed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_provider_eo.audit.epoch_id_runs import parse_runs, runs_text
from airflow_provider_eo.config import parse_pipelines_text
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.operators.audit_submit import AuditWindowOperator
from airflow_provider_eo.spark.driver.audit_application import AuditRefused, epoch_ids

SPEC = parse_pipelines_text(
    "pipelines:\n  - name: p\n    topics: [t]\n    hbase: {table: t}\n", "inline.yaml"
)["p"]


def test_runs_round_trip() -> None:
    assert runs_text([15, 12, 13, 14, 18, 20, 21]) == "12-15,18,20-21"
    assert parse_runs("12-15,18,20-21") == [12, 13, 14, 15, 18, 20, 21]
    assert parse_runs("12,13,15") == [12, 13, 15]  # the plain list of the resolve task before runs
    assert runs_text(range(1, 100_001)) == "1-100000"
    assert parse_runs("1-100000") == list(range(1, 100_001))


@pytest.mark.parametrize(
    ("text", "said"), [("", "name no epoch"), ("12-a", "'12-a'"), ("9-3", "'9-3' starts")]
)
def test_malformed_runs_are_refused_naming_the_text(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        parse_runs(text)
    with pytest.raises(AuditRefused, match="--epoch-ids"):
        epoch_ids(text)


def test_a_hundred_thousand_epochs_are_one_short_argument_and_the_log_names_the_window() -> None:
    ids = ",".join(map(str, range(1, 100_001)))  # the XCom of an older resolve task
    op = AuditWindowOperator(task_id="audit", pipeline="p", epoch_ids=ids, spec=SPEC)
    run = SimpleNamespace(dag_id="eo_audit__p", run_id="manual-1")  # a context's run, as Airflow gives it
    args = op.application_arguments({"dag_run": run}, "unused")
    assert args[:6] == ["--pipeline", "p", "--epoch-ids", "1-100000", "--run-key", "eo_audit__p/manual-1"]
    assert op.submission_subject() == ("Auditing window", "epoch_ids=1-100000")
    with pytest.raises(
        ConfigError, match="pipeline p: epoch ids must be ids or runs A-B separated by commas, not 'x'"
    ):
        AuditWindowOperator(task_id="audit2", pipeline="p", epoch_ids="x", spec=SPEC).window_text()


def audit_op(budget: str) -> AuditWindowOperator:
    return AuditWindowOperator(
        task_id="audit", pipeline="p", epoch_ids="3", spec=SPEC, index_budget_bytes=budget
    )


def test_the_index_budget_is_the_forms_or_the_pipelines_and_refused_by_name() -> None:
    context = {"dag_run": SimpleNamespace(dag_id="eo_audit__p", run_id="manual-1")}
    assert audit_op("4096").application_arguments(context, "unused")[6:8] == ["--index-budget-bytes", "4096"]
    budget = str(SPEC.audit.index_budget_bytes)
    assert audit_op("").application_arguments(context, "unused")[6:8] == ["--index-budget-bytes", budget]
    for bad in ("0", "-5", "1G"):
        with pytest.raises(ConfigError) as info:
            audit_op(bad).index_budget()
        said = f"pipeline p: index_budget_bytes must be an integer >= 1 (bytes), got {bad!r}"
        assert str(info.value) == said
