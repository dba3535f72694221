"""The DAG factory and template (no services): ids, tasks, order, schedule, the backfill form,
the session-mode write, and what a task's process builds and imports (its parsing context)."""

from __future__ import annotations

import dataclasses
import json
import os
import runpy
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest
import yaml

from airflow_provider_eo.config import PipelineConfigError, load_pipelines
from airflow_provider_eo.config.spec_digest import spec_digest
from airflow_provider_eo.config.specs import AuditSpec
from airflow_provider_eo.dags.factory import EPOCH_LABEL, RECOVERY_DAG_ID, build_dags
from airflow_provider_eo.operators.audit import AuditVerdictOperator, ResolveAuditWindowOperator
from airflow_provider_eo.operators.audit_submit import AuditWindowOperator
from airflow_provider_eo.operators.backfill_chunks import PlanBackfillOperator, WriteBackfillChunkOperator
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.recover import RecoverEpochsOperator
from airflow_provider_eo.operators.release import ReleaseEpochOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from airflow_provider_eo.operators.session_write_operator import SessionWriteEpochOperator
from airflow_provider_eo.operators.wait import WaitForRecordsOperator
from airflow_provider_eo.operators.write import WriteEpochOperator

pytestmark = pytest.mark.airflow

TEMPLATE = Path(__file__).resolve().parents[2] / "dags" / "eo_pipelines.py"
PIPELINES = {
    "pipelines": [
        {
            "name": "orders",
            "topics": ["orders"],
            "hbase": {"table": "orders"},
            "schedule": "*/5 * * * *",
            "audit": {"schedule": "@daily"},
        },
        {
            "name": "clicks",
            "topic_pattern": "clicks-.*",
            "hbase": {"table": "clicks"},
            "schedule": "@hourly",
            "spark": {"deploy_mode": "cluster", "split_size": 10},
            "timeouts": {"write_minutes": 5, "run_minutes": 30},
        },
        {"name": "manual", "topics": ["a", "b"], "hbase": {"table": "m"}},
    ]
}


@pytest.fixture
def pipelines_file(tmp_path: Path) -> Path:
    path = tmp_path / "pipelines.yaml"
    path.write_text(yaml.safe_dump(PIPELINES, sort_keys=False))
    return path


def _edges(dag: object) -> set[tuple[str, str]]:
    tasks = dag.tasks  # type: ignore[attr-defined]
    return {(task.task_id, down) for task in tasks for down in task.downstream_task_ids}


def test_factory_builds_every_dag_with_its_tasks_and_order(pipelines_file: Path) -> None:
    dags = build_dags(pipelines_file)
    assert list(dags) == [
        "eo_stream__orders",
        "eo_backfill__orders",
        "eo_audit__orders",
        "eo_stream__clicks",
        "eo_backfill__clicks",
        "eo_audit__clicks",
        "eo_stream__manual",
        "eo_backfill__manual",
        "eo_audit__manual",
        RECOVERY_DAG_ID,
    ]

    stream = dags["eo_stream__orders"]
    assert stream.max_active_runs == 1
    assert stream.catchup is False
    assert [type(t) for t in stream.tasks] == [
        RecoverEpochsOperator,
        ReserveEpochOperator,
        WriteEpochOperator,
        CommitEpochOperator,
        WaitForRecordsOperator,  # a scheduled pipeline waits by default (docs/pipelines.md, wait)
    ]
    assert _edges(stream) == {
        ("recover", "wait"),
        ("wait", "reserve"),
        ("reserve", "write"),
        ("write", "commit"),
    }
    assert _edges(dags["eo_stream__manual"]) == {
        ("recover", "reserve"),
        ("reserve", "write"),
        ("write", "commit"),
    }
    recover = stream.get_task("recover")
    assert isinstance(recover, RecoverEpochsOperator)
    assert recover.kind == "stream"
    write = stream.get_task("write")
    assert isinstance(write, WriteEpochOperator)
    assert write.epoch_id == "{{ ti.xcom_pull(task_ids='reserve')['epoch_id'] }}"
    assert write.fencing_token == "{{ ti.xcom_pull(task_ids='reserve')['fencing_token'] }}"
    assert str(pipelines_file.resolve()) == write.pipelines_file
    assert write.map_index_template == EPOCH_LABEL
    assert stream.get_task("commit").map_index_template == EPOCH_LABEL
    for task in stream.tasks:
        assert vars(task)["pipeline"] == "orders"

    backfill = dags["eo_backfill__orders"]
    assert [t.task_id for t in backfill.tasks] == ["plan", "chunk.write", "chunk.commit", "release"]
    assert isinstance(backfill.get_task("plan"), PlanBackfillOperator)
    assert isinstance(backfill.get_task("chunk.write"), WriteBackfillChunkOperator)
    assert isinstance(backfill.get_task("chunk.commit"), CommitEpochOperator)
    assert isinstance(backfill.get_task("release"), ReleaseEpochOperator)
    assert backfill.get_task("plan").is_setup
    assert backfill.get_task("release").is_teardown
    assert _edges(backfill) == {
        ("plan", "chunk.write"),
        ("chunk.write", "chunk.commit"),
        ("chunk.commit", "release"),
        ("plan", "release"),
    }

    recovery = dags[RECOVERY_DAG_ID]
    assert recovery.max_active_runs == 1
    assert sorted(t.task_id for t in recovery.tasks) == [
        "recover__clicks",
        "recover__manual",
        "recover__orders",
    ]
    assert all(getattr(t, "kind", "x") is None for t in recovery.tasks)


def test_schedules_and_spark_settings_come_from_the_yaml(pipelines_file: Path) -> None:
    dags = build_dags(pipelines_file)
    assert dags["eo_stream__orders"].schedule == "*/5 * * * *"
    assert type(dags["eo_stream__orders"].timetable).__name__ == "CronTriggerTimetable"
    assert dags["eo_stream__clicks"].schedule == "@hourly"
    assert dags["eo_stream__manual"].schedule is None
    assert type(dags["eo_stream__manual"].timetable).__name__ == "NullTimetable"
    write = dags["eo_stream__clicks"].get_task("write")
    assert isinstance(write, WriteEpochOperator)
    assert write._deploy_mode == "cluster"
    # only names and ids on the application's command line
    assert write.application_args == ["--pipeline", "clicks", "--epoch-id", write.epoch_id]


def test_timeouts_bound_the_write_task_and_the_run(pipelines_file: Path) -> None:
    """A hung write or an abandoned run never holds the pipeline's open epoch forever."""
    dags = build_dags(pipelines_file)
    for kind, group in (("stream", ""), ("backfill", "chunk.")):
        clicks, manual = dags[f"eo_{kind}__clicks"], dags[f"eo_{kind}__manual"]
        assert clicks.dagrun_timeout == timedelta(minutes=30)
        assert clicks.get_task(f"{group}write").execution_timeout == timedelta(minutes=5)
        assert manual.dagrun_timeout == timedelta(minutes=240)  # the defaults
        assert manual.get_task(f"{group}write").execution_timeout == timedelta(minutes=60)
        assert manual.get_task(f"{group}commit").execution_timeout == timedelta(minutes=5)


def test_every_step_is_bounded_and_the_stream_steps_retry_soon(pipelines_file: Path) -> None:
    """The values docs/scale.md ("Airflow settings that recover fast") recommends: each
    step's try is bounded; the stream DAG's steps retry twice, after 10 s then 20 s (before
    Airflow's jitter), at most a minute apart; the backfill DAG's steps do not retry."""
    dags = build_dags(pipelines_file)
    stream, backfill, recovery = dags["eo_stream__clicks"], dags["eo_backfill__clicks"], dags[RECOVERY_DAG_ID]
    minutes = {
        task.task_id: task.execution_timeout / timedelta(minutes=1)  # type: ignore[operator]
        for dag in (stream, backfill, recovery)
        for task in dag.tasks
        if dag is not stream or task.task_id != "wait"
    }
    assert minutes == {
        "recover": 10, "reserve": 5, "write": 5, "commit": 5,
        "plan": 5, "chunk.write": 5, "chunk.commit": 5, "release": 5,
        "recover__orders": 10, "recover__clicks": 10, "recover__manual": 10,
    }  # fmt: skip
    retries = {
        (task.retries, task.retry_delay, task.retry_exponential_backoff, task.max_retry_delay)
        for task in stream.tasks
    }
    assert retries == {(2, timedelta(seconds=10), 2.0, timedelta(minutes=1))}
    assert {task.retries for task in backfill.tasks} == {0}


def test_backfill_trigger_form_params(pipelines_file: Path) -> None:
    params = build_dags(pipelines_file)["eo_backfill__manual"].params
    assert list(params) == [
        "topics",
        "partitions",
        "start_offset",
        "end_offset",
        "start_time",
        "end_time",
        "dead_letters_of_epoch",
    ]
    titles = {name: params.get_param(name).schema["title"] for name in params}
    assert titles == {
        "topics": "Topics",
        "partitions": "Partitions",
        "start_offset": "Start offset",
        "end_offset": "End offset",
        "start_time": "Start time",
        "end_time": "End time",
        "dead_letters_of_epoch": "The dead letters of epoch N",
    }
    assert all(params.get_param(name).description for name in params)
    assert "(a, b)" in str(params.get_param("topics").description)
    assert params.dump() == {
        "topics": [],
        "partitions": [],
        "start_offset": None,
        "end_offset": None,
        "start_time": None,
        "end_time": None,
        "dead_letters_of_epoch": None,
    }
    params.validate()  # the defaults are valid

    def valid(name: str, value: object) -> bool:
        try:
            params.get_param(name).resolve(value)
        except Exception:
            return False
        return True

    assert valid("partitions", [0, 3]) and not valid("partitions", [-1]) and not valid("partitions", ["0"])
    assert valid("topics", ["a"]) and not valid("topics", [""])
    assert valid("start_offset", 0) and not valid("start_offset", -5) and not valid("start_offset", "10")
    assert valid("end_offset", None) and valid("end_offset", 7)
    assert valid("dead_letters_of_epoch", 12) and not valid("dead_letters_of_epoch", 0)
    schema = params.get_param("start_time").schema
    jsonschema.validate("2024-01-01T00:00:00Z", schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(12, schema)


def test_template_reads_the_file_named_by_the_environment(
    pipelines_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EO_PIPELINES_FILE", str(pipelines_file))
    namespace = runpy.run_path(str(TEMPLATE))
    assert sorted(k for k in namespace if k.startswith("eo_")) == sorted(build_dags(pipelines_file))


def test_invalid_pipelines_file_names_file_pipeline_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                "pipelines": [
                    {
                        "name": "orders",
                        "topics": ["o"],
                        "hbase": {"table": "o"},
                        "caps": {"max_records_total": 0},
                    }
                ]
            }
        )
    )
    with pytest.raises(PipelineConfigError) as raised:
        build_dags(bad)
    message = str(raised.value)
    assert str(bad.resolve()) in message
    assert "pipeline 'orders'" in message
    assert "field 'caps.max_records_total'" in message


def test_the_audit_dag_resolves_audits_on_spark_then_judges(pipelines_file: Path) -> None:
    dags = build_dags(pipelines_file)
    audit = dags["eo_audit__orders"]
    assert [type(t) for t in audit.tasks] == [
        ResolveAuditWindowOperator,
        AuditWindowOperator,
        AuditVerdictOperator,
    ]
    assert _edges(audit) == {("resolve", "audit"), ("audit", "verdict")}
    assert (audit.schedule, dags["eo_audit__manual"].schedule) == ("@daily", None)
    assert list(audit.params) == ["epochs", "since", "last", "index_budget_bytes"]
    assert audit.params["index_budget_bytes"] == 256 << 20  # the pipeline's audit.index_budget_bytes
    spark = audit.get_task("audit")
    assert spark.application.endswith("spark/driver/audit_application.py")
    assert spark.name == "eo-audit-orders"
    assert "epoch_ids" in spark.template_fields
    assert spark.epoch_ids == "{{ ti.xcom_pull(task_ids='resolve')['epoch_ids'] }}"
    assert spark.index_budget_bytes == "{{ params.index_budget_bytes or '' }}"
    # audit settings decide no cell: the mapping digest is the same with or without them
    orders = load_pipelines(pipelines_file)["orders"]
    assert spec_digest(orders) == spec_digest(dataclasses.replace(orders, audit=AuditSpec()))


SESSION_PIPELINE = {
    "name": "live",
    "topics": ["live"],
    "hbase": {"table": "live"},
    "spark": {"mode": "session"},
}


@pytest.fixture
def with_session_pipeline(tmp_path: Path) -> Path:
    """PIPELINES and ``live``, a ``spark.mode: session`` pipeline."""
    path = tmp_path / "pipelines.yaml"
    path.write_text(
        yaml.safe_dump({"pipelines": [*PIPELINES["pipelines"], SESSION_PIPELINE]}, sort_keys=False)
    )
    return path


def test_a_session_pipelines_stream_write_is_the_session_operator(with_session_pipeline: Path) -> None:
    """Same task id, templates, label, link and timeout as the submit mode's write; no
    ``SparkSubmitOperator`` (the backfill chunk's write stays one, in either mode)."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    dags = build_dags(with_session_pipeline)
    stream = dags["eo_stream__live"]
    assert [t.task_id for t in stream.tasks] == ["recover", "reserve", "write", "commit"]
    assert _edges(stream) == {("recover", "reserve"), ("reserve", "write"), ("write", "commit")}
    write = stream.get_task("write")
    assert type(write) is SessionWriteEpochOperator
    assert not isinstance(write, SparkSubmitOperator)
    assert tuple(write.template_fields) == ("epoch_id", "fencing_token")
    assert write.epoch_id == "{{ ti.xcom_pull(task_ids='reserve')['epoch_id'] }}"
    assert write.fencing_token == "{{ ti.xcom_pull(task_ids='reserve')['fencing_token'] }}"
    assert write.map_index_template == EPOCH_LABEL
    assert write.execution_timeout == timedelta(minutes=60)
    assert [link.name for link in write.operator_extra_links] == ["Epoch"]
    assert write.spec.spark.connect_conn_id == "spark_connect"
    assert type(dags["eo_stream__orders"].get_task("write")) is WriteEpochOperator
    assert isinstance(dags["eo_backfill__live"].get_task("chunk.write"), WriteBackfillChunkOperator)
    with pytest.raises(ValueError, match=r"spark\.mode session pipelines only"):
        SessionWriteEpochOperator(
            task_id="w", pipeline="orders", spec=load_pipelines(with_session_pipeline)["orders"]
        )


@pytest.mark.parametrize("dag_id", ["eo_audit__orders", "eo_backfill__live", RECOVERY_DAG_ID])
def test_a_tasks_parsing_context_builds_its_dag_alone(
    with_session_pipeline: Path, dag_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = build_dags(with_session_pipeline)
    monkeypatch.setenv("_AIRFLOW_PARSING_CONTEXT_DAG_ID", dag_id)  # what get_parsing_context reads
    only = build_dags(with_session_pipeline)
    assert list(only) == [dag_id]
    assert [t.task_id for t in only[dag_id].tasks] == [t.task_id for t in everything[dag_id].tasks]


def test_an_unknown_dag_id_in_the_parsing_context_builds_every_dag(
    with_session_pipeline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = build_dags(with_session_pipeline)
    monkeypatch.setenv("_AIRFLOW_PARSING_CONTEXT_DAG_ID", "eo_stream__removed")
    assert list(build_dags(with_session_pipeline)) == list(everything)


# A task's process as the task runner parses the DAG file (its parsing context: the DAG and
# task ids of the task instance); prints the DAGs built and the heavy modules imported.
PARSE_AS_TASK = textwrap.dedent(
    """
    import json, sys
    from airflow.sdk.definitions._internal.dag_parsing_context import _airflow_parsing_context_manager

    with _airflow_parsing_context_manager(dag_id=sys.argv[2], task_id="write"):
        from airflow_provider_eo.dags.factory import build_dags

        dags = build_dags(sys.argv[1])
    heavy = (
        "airflow.providers.apache.spark.operators.spark_submit",
        "airflow.providers.openlineage.plugins.listener",
        "airflow_provider_eo.operators.write",
        "airflow_provider_eo.operators.audit_submit",
    )
    write = dags[sys.argv[2]].get_task("write")
    loaded = [m for m in heavy if m in sys.modules]
    print(json.dumps({"dags": list(dags), "write": type(write).__name__, "loaded": loaded}))
    """
)


def test_a_session_stream_task_builds_its_dag_without_spark_submit(with_session_pipeline: Path) -> None:
    """The fixed cost of a session-mode epoch (docs/performance.md, "Task start"): none of its
    four tasks imports the Spark provider's spark_submit (nor the OpenLineage listener it
    pulls in), the submit write or the audit's operator; only its own DAG is built."""
    done = subprocess.run(
        [sys.executable, "-c", PARSE_AS_TASK, str(with_session_pipeline), "eo_stream__live"],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("_AIRFLOW_PARSING_CONTEXT")},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "dags": ["eo_stream__live"],
        "write": "SessionWriteEpochOperator",
        "loaded": [],
    }
