"""ReserveEpochOperator: open the pipeline's next stream epoch (backfills: ``backfill.py``).

Step 1 of DESIGN.md section 2. All decisions (partitions, start offsets, caps, data
loss, one open epoch per pipeline, idempotent retry within a run) are the Ledger's;
these operators resolve the pipeline, the hooks and the run identity, call it, and
turn "no new data" into a skip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo.faults import fault_point
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.operators.common import epoch_summary, load_spec, log_epoch, run_identity


class ReserveEpochOperator(BaseOperator):
    """Reserve the pipeline's next stream epoch (state RESERVED) for this DAG run.

    Returns (XCom) ``{epoch_id, pipeline, kind, state, fencing_token, dag_id, run_id,
    ranges: [{topic, partition, start, end, records}], records_total}``. No new data:
    raises ``AirflowSkipException`` (downstream tasks skip) and opens no epoch. A retry
    or clear of this task in the same run returns that run's open epoch.

    :param pipeline: pipeline name in the pipelines file (templated).
    :param pipelines_file: pipelines YAML path; None: ``EO_PIPELINES_FILE`` or the default (templated).
    :param ledger_conn_id: PostgreSQL connection of the ledger.
    :param kafka_conn_id: Kafka connection (librdkafka settings in extra).
    """

    template_fields: Sequence[str] = ("pipeline", "pipelines_file")
    ui_color = "#e8f0fe"

    def __init__(
        self,
        *,
        pipeline: str,
        pipelines_file: str | None = None,
        ledger_conn_id: str = "eo_ledger",
        kafka_conn_id: str = "eo_kafka",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pipeline = pipeline
        self.pipelines_file = pipelines_file
        self.ledger_conn_id = ledger_conn_id
        self.kafka_conn_id = kafka_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        spec = load_spec(self.pipelines_file, self.pipeline)
        dag_id, run_id = run_identity(context)
        with EoLedgerHook(self.ledger_conn_id).get_ledger() as ledger:
            kafka = EoKafkaHook(self.kafka_conn_id)
            epoch = ledger.reserve_stream_epoch(spec, kafka, dag_id=dag_id, run_id=run_id)
        if epoch is None:
            self.log.info(
                "no new data, no epoch opened pipeline=%s dag_id=%s run_id=%s", spec.name, dag_id, run_id
            )
            raise AirflowSkipException(f"pipeline {spec.name!r}: no new data, no epoch opened")
        log_epoch(self.log, "reserved epoch", epoch)
        fault_point("reserve.after_insert")
        return epoch_summary(epoch)
