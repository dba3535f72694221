"""The backfill DAG's chunked run: plan the chunks, then write each one (reserve + Spark).

``plan`` (:class:`PlanBackfillOperator`) returns the run's chunks, one backfill epoch
each (:meth:`EpochProtocol.plan_backfill`); the DAG maps a task group over them, so the
grid shows one ``write``/``commit`` instance per chunk. :class:`WriteBackfillChunkOperator`
reserves its chunk's epoch and runs the Spark write in one task (after the write's checks
of its Spark target: a refused target reserves nothing), so every retry or clear of it
reserves again: the run's open epoch over the same ranges comes back (written or
not), an epoch this run already committed is not written twice, and an epoch the run's
``release`` aborted is replaced by a new one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo.ledger.protocol import NothingToReserve, Reserved
from airflow_provider_eo.lineage.operator_lineage import epoch_after_write
from airflow_provider_eo.operators.backfill import backfill_request
from airflow_provider_eo.operators.backfill_request_form import request_of
from airflow_provider_eo.operators.pipeline_operator import (
    PipelineOperator,
    check_kafka_client,
    open_protocol,
)
from airflow_provider_eo.operators.run_context import run_identity, task_actor
from airflow_provider_eo.operators.write import WriteEpochOperator
from airflow_provider_eo.operators.xcom import epoch_summary


class PlanBackfillOperator(PipelineOperator):
    """Plan this backfill run: its ranges (explicit ``ranges``, the data interval of a run
    of Airflow's backfill, or the Trigger form) cut into chunks of at most the pipeline's
    ``backfill.max_records_per_epoch`` offsets.

    Returns (XCom) the chunks in order, each a list of ``{topic, partition, start, end,
    records}``. Nothing to replay: ``AirflowSkipException``. Invalid form or ranges:
    ``ValueError`` / ``InvalidRanges`` naming the field, topic or partition.

    :param ranges: explicit ranges (templated), as :class:`ReserveBackfillEpochOperator`.
    Other parameters: :class:`PipelineOperator`.
    """

    template_fields: Sequence[str] = ("pipeline", "pipelines_file", "ranges")
    ui_color = "#e8f0fe"

    def __init__(self, *, ranges: str | list[Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ranges = ranges

    def execute(self, context: Context) -> list[list[dict[str, Any]]]:
        spec = self.pipeline_spec()
        with self.epoch_protocol(context) as protocol:
            chunks = protocol.plan_backfill(spec, backfill_request(context, self.ranges))
        if not chunks:
            raise AirflowSkipException(f"pipeline {spec.name!r}: nothing to backfill in the requested range")
        return [[r.to_summary() for r in chunk] for chunk in chunks]


class WriteBackfillChunkOperator(WriteEpochOperator):
    """Reserve the backfill epoch of one chunk for this run, then write it with Spark
    (spark-submit, or in session mode a job on the Spark Connect server).

    The reservation (:meth:`EpochProtocol.reserve_backfill`) gives back the run's epoch
    over exactly these ranges when there is one: RESERVED is written (under its fencing
    token), WRITTEN or COMMITTED is not written again (a resumed run). Returns (XCom) the
    epoch's summary as the ledger holds it after the write (``epoch_summary``), which
    the chunk's ``commit`` reads; OpenLineage gets that epoch too (a resumed chunk's also).

    :param ranges: the chunk, a list of ``{topic, partition, start, end[, records]}``
        (templated; in the DAG an element of the plan task's XCom).
    Other parameters: :class:`WriteEpochOperator` (no ``epoch_id``: reserved here).
    """

    template_fields: Sequence[str] = (*WriteEpochOperator.template_fields, "ranges")

    def __init__(self, *, ranges: str | list[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)  # the epoch is reserved in execute
        self.ranges = ranges

    def execute(self, context: Any) -> dict[str, Any]:  # type: ignore[override]
        spec = self.spec
        env = self.application_env()  # connections, then the target checked: a refusal reserves nothing
        session = spec.spark.mode == "session"  # a job on the Spark Connect server, no spark-submit
        target = None if session else self.submission_target(env)
        check_kafka_client(self.kafka_conn_id)  # a client this librdkafka cannot build: no epoch
        with open_protocol(self.ledger_conn_id, self.kafka_conn_id, task_actor(context)) as protocol:
            outcome = protocol.reserve_backfill(spec, request_of(self.ranges), run_identity(context))
        if isinstance(outcome, NothingToReserve):
            raise AirflowSkipException(f"pipeline {spec.name!r}: {outcome.reason}")
        epoch = outcome.epoch
        self.epoch_id = epoch.epoch_id  # also what the "Epoch" extra link shows
        if isinstance(outcome, Reserved):
            self.fencing_token = str(epoch.fencing_token)
            if target is None:
                self.write_on_session(context, env)
            else:
                self.write(context, target, env)
            self.lineage_epoch = epoch_after_write(self.ledger_conn_id, epoch.epoch_id)
        else:
            self.log.info(
                "Chunk already %s by this run, not written again: pipeline=%s epoch_id=%s ranges=%s",
                epoch.state.value, spec.name, epoch.epoch_id, epoch.ranges_brief,
            )  # fmt: skip
        if self.lineage_epoch is None:  # the write read it already where OpenLineage is on
            with open_protocol(self.ledger_conn_id, self.kafka_conn_id, task_actor(context)) as protocol:
                self.lineage_epoch = protocol.epoch(epoch.epoch_id)  # a resumed chunk's too
        return epoch_summary(self.lineage_epoch)
