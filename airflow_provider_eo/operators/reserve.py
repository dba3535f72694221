"""ReserveEpochOperator: open the pipeline's next stream epoch (backfills: ``backfill.py``).

Step 1 of docs/DESIGN.md section 2. All decisions (partitions, start offsets, caps, data
loss, one open epoch per pipeline, idempotent retry within a run) are the Ledger's;
these operators resolve the pipeline, the hooks and the run identity, call it, and
turn "no new data" into a skip.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo import protocol_points
from airflow_provider_eo.hooks.kafka import EoKafkaError
from airflow_provider_eo.operators.common import epoch_summary, log_epoch, run_identity
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator


class ReserveEpochOperator(PipelineOperator):
    """Reserve the pipeline's next stream epoch (state RESERVED) for this DAG run.

    Returns (XCom) ``{epoch_id, pipeline, kind, state, fencing_token, dag_id, run_id,
    ranges: [{topic, partition, start, end, records}], records_total}``. No new data:
    raises ``AirflowSkipException`` (downstream tasks skip) and opens no epoch. A retry
    or clear of this task in the same run returns that run's open epoch.

    Parameters: :class:`PipelineOperator`.
    """

    ui_color = "#e8f0fe"

    def execute(self, context: Context) -> dict[str, Any]:
        spec = self.pipeline_spec()
        dag_id, run_id = run_identity(context)
        with self.open_ledger() as ledger:
            try:
                epoch = ledger.reserve_stream_epoch(spec, self.kafka_hook(), dag_id=dag_id, run_id=run_id)
            except EoKafkaError as exc:  # name the pipeline: the hook only knows topics
                raise EoKafkaError(f"pipeline {spec.name!r}: {exc}") from exc
        if epoch is None:
            self.log.info(
                "no new data, no epoch opened pipeline=%s dag_id=%s run_id=%s", spec.name, dag_id, run_id
            )
            raise AirflowSkipException(f"pipeline {spec.name!r}: no new data, no epoch opened")
        log_epoch(self.log, "reserved epoch", epoch)
        protocol_points.passed("reserve.after_insert")
        return epoch_summary(epoch)
