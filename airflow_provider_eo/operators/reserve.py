"""ReserveEpochOperator: open the pipeline's next stream epoch (backfills: ``backfill.py``).

Step 1 of docs/DESIGN.md section 2, as :meth:`EpochProtocol.reserve_stream` decides it
(partitions, start offsets, caps, data loss, one open epoch per pipeline, idempotent
retry within a run). The operator turns "nothing to reserve" into a skip.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.protocol import EpochProtocol, NothingToReserve, Reservation
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator
from airflow_provider_eo.operators.run_context import run_identity
from airflow_provider_eo.operators.xcom import epoch_summary


class ReserveEpochOperator(PipelineOperator):
    """Reserve the pipeline's next stream epoch (state RESERVED) for this DAG run.

    Returns (XCom) the epoch's summary (``Epoch.to_summary``: ``epoch_id``, ``ranges:
    [{topic, partition, start, end, records}]``, ``records_total``, ...) plus its
    ``fencing_token`` (``operators/xcom.py``, ``epoch_summary``). No new data:
    raises ``AirflowSkipException`` (downstream tasks skip) and opens no epoch. A retry
    or clear of this task in the same run returns that run's open epoch.

    Parameters: :class:`PipelineOperator`.
    """

    ui_color = "#e8f0fe"

    def execute(self, context: Context) -> dict[str, Any]:
        spec = self.pipeline_spec()
        self.check_kafka_client()  # a client this librdkafka cannot build: refused, no epoch
        with self.epoch_protocol(context) as protocol:
            outcome = self.reserve(protocol, spec, run_identity(context), context)
        if isinstance(outcome, NothingToReserve):
            raise AirflowSkipException(f"pipeline {outcome.pipeline!r}: {outcome.reason}")
        return epoch_summary(outcome.epoch)

    def reserve(
        self, protocol: EpochProtocol, spec: PipelineSpec, run: RunIdentity, context: Context
    ) -> Reservation:
        """The reservation this operator makes (subclasses reserve other kinds)."""
        return protocol.reserve_stream(spec, run)
