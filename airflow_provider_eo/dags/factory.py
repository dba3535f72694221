"""Build every pipeline's Airflow DAGs from the pipelines YAML.

DAG ids (``<name>`` is the pipeline name):

* ``eo_stream__<name>``: recover -> [wait ->] reserve -> write -> commit, on the pipeline's
  schedule, ``max_active_runs=1`` (``wait``: defers in the triggerer while nothing is pending);
* both the stream and the backfill DAG bound the write task (``execution_timeout``) and
  the run (``dagrun_timeout``) by the pipeline's ``timeouts``, so a hung Spark job or a
  run whose worker died never holds an open epoch forever; every other task is bounded
  by :data:`STEP_TIMEOUTS` (a ledger or Kafka call that hangs fails its try and is
  retried instead of waiting for the run's timeout);
* the stream DAG's tasks retry by :data:`DEFAULT_ARGS` (2 retries after 10-20 s, then
  20-40 s: Airflow's exponential backoff with its jitter); the backfill DAG's do not
  (a failed chunk is cleared or run again by hand, docs/operators.md);
* ``eo_backfill__<name>``: a historical range, from the Trigger form or, one run per
  interval, from Airflow's Backfill dialog (the interval's Kafka timestamps are the
  range), as ``backfill`` epochs beside the stream (no cursor or group offsets move),
  several (chunks) when larger than ``backfill.max_records_per_epoch``; the stream DAG
  refuses backfill runs (``allowed_run_types``);
* ``eo_audit__<name>``: resolve -> audit (Spark) -> verdict, on the pipeline's
  ``audit.schedule`` (:mod:`.audit_dag`);
* ``eo_recovery``: recovers every pipeline's open epochs (manual trigger).

Only the YAML is read at parse time; nothing connects anywhere. A task's process parses the
DAG file for its own DAG only: when Airflow's parsing context names a DAG id the file
declares (``get_parsing_context()``, set by the task runner), :func:`build_dags` builds that
DAG alone; the DAG processor (no DAG id) and an unknown DAG id get every DAG. Each builder
imports the operators of its DAG kind itself, so a task loads only its DAG's operators: the
tasks of a ``spark.mode: session`` pipeline's stream DAG (its write a
:class:`SessionWriteEpochOperator`) never load the Spark provider's ``spark_submit`` module,
and only an audit DAG's tasks load the audit's ``SparkSubmitOperator`` subclass
(docs/performance.md, "Task start").
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import DAG, get_parsing_context

# The task SDK types DAG(allowed_run_types=...) with this enum and exports it nowhere public.
from airflow.sdk.api.datamodels._generated import DagRunType

from airflow_provider_eo.assets import asset_for
from airflow_provider_eo.config import PipelineSpec, load_pipelines, resolve_pipelines_file
from airflow_provider_eo.dag_ids import (
    CHUNK_GROUP_ID,
    RECOVERY_DAG_ID,
    audit_dag_id,
    backfill_dag_id,
    stream_dag_id,
)
from airflow_provider_eo.dags.audit_dag import build_audit_dag
from airflow_provider_eo.dags.backfill_params import backfill_params
from airflow_provider_eo.dags.backfill_timetable import BackfillOnlyTimetable

if TYPE_CHECKING:
    from airflow_provider_eo.operators.epoch_write import EpochWriteOperator

START_DATE = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULT_ARGS: dict[str, Any] = {
    "retries": 2,
    "retry_delay": timedelta(seconds=10),
    "retry_exponential_backoff": 2.0,
    "max_retry_delay": timedelta(minutes=1),
}
"""Every step is safe to retry (the same epoch and token come back) and a transient outage
lasts seconds: the first retry comes soon. A killed task is retried once Airflow sees it
dead (``task_instance_heartbeat_timeout``, docs/scale.md "Airflow settings that recover fast")."""
STEP_TIMEOUTS: dict[str, timedelta] = {
    "recover": timedelta(minutes=10),
    "reserve": timedelta(minutes=5),
    "commit": timedelta(minutes=5),
    "plan": timedelta(minutes=5),
    "release": timedelta(minutes=5),
}
"""``execution_timeout`` of the steps that only talk to the ledger and Kafka (the write's is
the pipeline's ``timeouts.write_minutes``)."""
EPOCH_ID_FROM = "{{{{ ti.xcom_pull(task_ids='{task}')['epoch_id'] }}}}"
TOKEN_FROM = "{{{{ ti.xcom_pull(task_ids='{task}')['fencing_token'] }}}}"
# What the Airflow UI shows for the write and commit task instances without opening a log
# (their "rendered map index", in the Map Index column of the Task Instances lists):
# "epoch 42 stream, 152 records: orders[0]=[100,250) orders[1]=[7,9)", rendered from the
# reserve task's XCom summary (also while Spark runs). At most 250 characters (the metadata
# DB column's size).
EPOCH_LABEL = (
    "{% filter truncate(250, True, '...', 0) %}{% set e = ti.xcom_pull(task_ids='reserve') %}"
    "{% if e %}epoch {{ e['epoch_id'] }} {{ e['kind'] }}, {{ e['records_total'] }} records:"
    "{% for r in e['ranges'] %} {{ r['topic'] }}[{{ r['partition'] }}]=[{{ r['start'] }},{{ r['end'] }})"
    "{% endfor %}{% endif %}{% endfilter %}"
)

# The backfill DAG's chunk instances: "chunk 2/3, 40 offsets: orders[0]=[40,80)", rendered
# from the plan task's XCom (the list of chunks) by the instance's map index.
CHUNK_LABEL = (
    "{% filter truncate(250, True, '...', 0) %}{% set chunks = ti.xcom_pull(task_ids='plan') %}"
    "{% if chunks %}{% set c = chunks[ti.map_index] %}chunk {{ ti.map_index + 1 }}/{{ chunks | length }}, "
    "{{ c | sum(attribute='records') }} offsets:"
    "{% for r in c %} {{ r['topic'] }}[{{ r['partition'] }}]=[{{ r['start'] }},{{ r['end'] }}){% endfor %}"
    "{% endif %}{% endfilter %}"
)
CHUNK_EPOCH_ID = "{{ ti.xcom_pull(task_ids='chunk.write', map_indexes=ti.map_index)['epoch_id'] }}"
# Airflow refuses (API, UI, scheduler) every other run type: the stream DAG never runs as
# a backfill (its epochs follow the ledger cursor, not a data interval; Airflow's Backfill
# dialog belongs to the backfill DAG), and no scheduled run of the backfill DAG exists.
STREAM_RUN_TYPES = frozenset(DagRunType) - {DagRunType.BACKFILL}
BACKFILL_RUN_TYPES = frozenset({DagRunType.MANUAL, DagRunType.OPERATOR_TRIGGERED, DagRunType.BACKFILL})


def build_dags(
    pipelines_file: str | Path | None = None, *, default_dir: str | Path | None = None
) -> dict[str, DAG]:
    """All DAGs for the pipelines file, keyed by DAG id; only the DAG Airflow's parsing
    context names when the file declares it (a task's process: see the module docstring).

    Raises ``PipelineConfigError`` (naming file, pipeline and field) for an invalid file.
    """
    path = str(resolve_pipelines_file(pipelines_file, default_dir=default_dir).resolve())
    builders = dag_builders(list(load_pipelines(path).values()), path)
    wanted = get_parsing_context().dag_id
    if wanted in builders:
        return {wanted: builders[wanted]()}
    return {dag_id: build() for dag_id, build in builders.items()}


def dag_builders(specs: list[PipelineSpec], pipelines_file: str) -> dict[str, Callable[[], DAG]]:
    """Every DAG id the pipelines declare, in order, with what builds its DAG (nothing built yet)."""
    builders: dict[str, Callable[[], DAG]] = {}
    for spec in specs:
        builders[stream_dag_id(spec.name)] = partial(build_stream_dag, spec, pipelines_file)
        builders[backfill_dag_id(spec.name)] = partial(build_backfill_dag, spec, pipelines_file)
        builders[audit_dag_id(spec.name)] = partial(build_audit_dag, spec, pipelines_file, START_DATE)
    builders[RECOVERY_DAG_ID] = partial(build_recovery_dag, specs, pipelines_file)
    return builders


def build_stream_dag(spec: PipelineSpec, pipelines_file: str) -> DAG:
    """recover -> [wait ->] reserve -> write -> commit for one pipeline (``wait`` when
    ``spec.wait.enabled``: :class:`WaitForRecordsOperator`; ``write``:
    :class:`SessionWriteEpochOperator` in ``spark.mode: session``, else :class:`WriteEpochOperator`)."""
    from airflow_provider_eo.operators.commit import CommitEpochOperator
    from airflow_provider_eo.operators.recover import RecoverEpochsOperator
    from airflow_provider_eo.operators.reserve import ReserveEpochOperator
    from airflow_provider_eo.operators.wait import WaitForRecordsOperator

    write_operator = session_or_submit_write(spec)
    common: dict[str, Any] = {"pipeline": spec.name, "spec": spec, "pipelines_file": pipelines_file}
    with DAG(
        dag_id=stream_dag_id(spec.name),
        schedule=spec.schedule,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        allowed_run_types=STREAM_RUN_TYPES,
        dagrun_timeout=timedelta(minutes=spec.timeouts.run_minutes),
        default_args=DEFAULT_ARGS,
        tags=["eo", "eo:stream", f"eo:{spec.name}"],
        doc_md=_doc(
            spec, "Stream: one epoch per run, from the ledger cursor, capped by the pipeline's limits."
        ),
    ) as dag:
        recover = RecoverEpochsOperator(
            task_id="recover",
            kind="stream",
            table_asset=asset_for(spec),
            execution_timeout=STEP_TIMEOUTS["recover"],
            **common,
        )
        reserve = ReserveEpochOperator(
            task_id="reserve", execution_timeout=STEP_TIMEOUTS["reserve"], **common
        )
        write = write_operator(
            task_id="write",
            epoch_id=EPOCH_ID_FROM.format(task="reserve"),
            fencing_token=TOKEN_FROM.format(task="reserve"),
            map_index_template=EPOCH_LABEL,
            execution_timeout=timedelta(minutes=spec.timeouts.write_minutes),
            **common,
        )
        commit = CommitEpochOperator(
            task_id="commit",
            epoch_id=EPOCH_ID_FROM.format(task="reserve"),
            map_index_template=EPOCH_LABEL,
            table_asset=asset_for(spec),
            execution_timeout=STEP_TIMEOUTS["commit"],
            **common,
        )
        if spec.wait.enabled:  # defer in the triggerer while nothing is past the cursors
            wait = WaitForRecordsOperator(
                task_id="wait",
                timeout=spec.wait.timeout_seconds,
                poll_interval=spec.wait.poll_seconds,
                **common,
            )
            recover >> wait >> reserve
        else:
            recover >> reserve
        reserve >> write >> commit
    return dag


def build_backfill_dag(spec: PipelineSpec, pipelines_file: str) -> DAG:
    """plan -> one ``chunk`` group (write -> commit) per chunk -> release (teardown).

    Runs come from the Trigger form (manual) or from Airflow's Backfill dialog over a
    date range (one run per interval of ``spec.backfill.schedule``, which is the range);
    the scheduler never starts one by itself (:class:`BackfillOnlyTimetable`).
    """
    from airflow.sdk import task_group  # its decorators' import: only where a DAG has a task group

    from airflow_provider_eo.operators.backfill_chunks import PlanBackfillOperator, WriteBackfillChunkOperator
    from airflow_provider_eo.operators.commit import CommitEpochOperator
    from airflow_provider_eo.operators.release import ReleaseEpochOperator

    common: dict[str, Any] = {"pipeline": spec.name, "spec": spec, "pipelines_file": pipelines_file}
    with DAG(
        dag_id=backfill_dag_id(spec.name),
        schedule=BackfillOnlyTimetable(spec.backfill.schedule, timezone="UTC"),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=4,
        allowed_run_types=BACKFILL_RUN_TYPES,
        dagrun_timeout=timedelta(minutes=spec.timeouts.run_minutes),
        params=backfill_params(spec),
        tags=["eo", "eo:backfill", f"eo:{spec.name}"],
        doc_md=_doc(
            spec, "Backfill: rewrite a historical range; the stream cursor and group offsets stay put."
        ),
    ) as dag:
        plan = PlanBackfillOperator(task_id="plan", execution_timeout=STEP_TIMEOUTS["plan"], **common)

        @task_group(group_id=CHUNK_GROUP_ID)
        def chunk(ranges: Any) -> None:
            write = WriteBackfillChunkOperator(
                task_id="write",
                ranges=ranges,
                map_index_template=CHUNK_LABEL,
                execution_timeout=timedelta(minutes=spec.timeouts.write_minutes),
                max_active_tis_per_dagrun=spec.backfill.max_parallel_chunks,
                **common,
            )
            commit = CommitEpochOperator(
                task_id="commit",
                epoch_id=CHUNK_EPOCH_ID,
                map_index_template=CHUNK_LABEL,
                table_asset=asset_for(spec),
                execution_timeout=STEP_TIMEOUTS["commit"],
                **common,
            )
            write >> commit

        chunks = chunk.expand(ranges=plan.output)
        release = ReleaseEpochOperator(
            task_id="release",
            table_asset=asset_for(spec),
            execution_timeout=STEP_TIMEOUTS["release"],
            **common,
        )
        plan >> chunks >> release.as_teardown(setups=plan)
    return dag


def build_recovery_dag(specs: list[PipelineSpec], pipelines_file: str) -> DAG:
    """One recover task per pipeline, over stream and backfill epochs."""
    from airflow_provider_eo.operators.recover import RecoverEpochsOperator

    with DAG(
        dag_id=RECOVERY_DAG_ID,
        schedule=None,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["eo", "eo:recovery"],
        doc_md=(
            "Recovery for every pipeline: WRITTEN epochs are committed; RESERVED epochs whose "
            "owning DAG run is no longer running are aborted (their ranges return to the next reservation)."
        ),
    ) as dag:
        for spec in specs:
            RecoverEpochsOperator(
                task_id=f"recover__{spec.name}",
                pipeline=spec.name,
                spec=spec,
                pipelines_file=pipelines_file,
                kind=None,
                table_asset=asset_for(spec),
                execution_timeout=STEP_TIMEOUTS["recover"],
            )
    return dag


def session_or_submit_write(spec: PipelineSpec) -> type[EpochWriteOperator]:
    """The stream write's operator class for ``spec.spark.mode`` (imported here: a session
    pipeline's tasks never load the ``SparkSubmitOperator`` of the submit mode)."""
    if spec.spark.mode == "session":
        from airflow_provider_eo.operators.session_write_operator import SessionWriteEpochOperator

        return SessionWriteEpochOperator
    from airflow_provider_eo.operators.write import WriteEpochOperator

    return WriteEpochOperator


def _doc(spec: PipelineSpec, what: str) -> str:
    topics = ", ".join(spec.topics) if spec.topics else f"/{spec.topic_pattern}/"
    return (
        f"**{what}**\n\n"
        f"Pipeline `{spec.name}`: Kafka {topics} (group `{spec.group_id}`) -> "
        f"HBase `{spec.hbase_table}`:`{spec.column_family}`. "
        "Each task's XCom holds the epoch summary (epoch id, ranges, counts)."
    )
