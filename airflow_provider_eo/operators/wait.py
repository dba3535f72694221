"""WaitForRecordsOperator: the stream DAG's deferrable wait between recover and reserve.

With it, a ``@continuous`` or frequent schedule holds no worker slot and starts no Spark
job while there is nothing to read: the task checks once, then defers to
:class:`~airflow_provider_eo.triggers.records_available.RecordsAvailableTrigger` in the
triggerer. The rule is :func:`~airflow_provider_eo.ledger.planning.new_records.pending_records`, applied to
:func:`~airflow_provider_eo.ledger.protocol.read_positions`. A check
that finds records at once stores its lag sample (the trigger stores those of its polls).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.ledger.protocol import read_positions
from airflow_provider_eo.observability.lag_sampling import WaitSampler
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator
from airflow_provider_eo.triggers.records_available import RecordsAvailableTrigger

#: Airflow's own deferral timeout is the trigger's deadline plus this margin: a backstop
#: for a triggerer that never ran the trigger (the task then fails and may retry).
DEFERRAL_BACKSTOP = timedelta(minutes=5)


class WaitForRecordsOperator(PipelineOperator):
    """Wait until the pipeline's next stream reservation has something to do.

    Checks once in the worker; if records are pending (or partitions must be pinned, or a
    cursor lies outside the watermarks) it returns at once, else it defers to the
    triggerer, which checks every ``poll_interval`` seconds for at most ``timeout``
    seconds. Returns (XCom) ``{"pipeline", "pending", "partitions": [{topic, partition,
    pending}], "unpinned": [...], "out_of_range": [...]}`` (``PendingRecords.to_json``).
    Nothing arrives in time: ``AirflowSkipException``, so reserve, write and commit skip,
    no epoch is opened and no Spark job starts.

    :param timeout: seconds to wait, counted from this task's start (templated).
    :param poll_interval: seconds between the trigger's checks (templated).
    Other parameters: :class:`PipelineOperator`.
    """

    template_fields: Sequence[str] = (*PipelineOperator.template_fields, "timeout", "poll_interval")
    ui_color = "#f1f3f4"

    def __init__(self, *, timeout: float = 3600, poll_interval: float = 10, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.timeout = timeout
        self.poll_interval = poll_interval

    def execute(self, context: Context) -> dict[str, Any]:
        started = time.time()
        spec = self.pipeline_spec()
        with EoLedgerHook(self.ledger_conn_id).get_ledger() as ledger:
            positions = read_positions(
                spec.name,
                spec.topics,
                spec.topic_pattern,
                ledger=ledger,
                kafka=EoKafkaHook(self.kafka_conn_id),
            )
            found = positions.pending()
            if found.ready:  # deferred: the trigger's first poll stores the sample
                WaitSampler().record(ledger, positions, ready=True)
        if found.ready:
            self.log.info("pipeline=%s ready at once: %s", spec.name, found.reason())
            return found.to_json()
        timeout, poll = float(self.timeout), float(self.poll_interval)
        self.log.info(
            "pipeline=%s nothing pending; deferring to the triggerer (check every %ss, at most %ss)",
            spec.name,
            poll,
            timeout,
        )
        trigger = RecordsAvailableTrigger(
            pipeline=spec.name,
            topics=spec.topics,
            topic_pattern=spec.topic_pattern,
            deadline=started + timeout,
            poll_interval=poll,
            ledger_conn_id=self.ledger_conn_id,
            kafka_conn_id=self.kafka_conn_id,
        )
        self.defer(
            trigger=trigger,
            method_name="execute_complete",
            timeout=timedelta(seconds=timeout) + DEFERRAL_BACKSTOP,
        )

    def execute_complete(self, context: Context, event: Mapping[str, Any]) -> dict[str, Any]:
        """Back from the trigger: the pending summary (``"records"``), else a skip (``"timeout"``)."""
        pipeline = event.get("pipeline", self.pipeline)
        if event.get("status") == "records":
            self.log.info("pipeline=%s records arrived: %s pending", pipeline, event.get("pending"))
            return {key: value for key, value in event.items() if key != "status"}
        raise AirflowSkipException(
            f"pipeline {pipeline!r}: no records past the cursors within {float(self.timeout):g}s"
        )
