"""ReserveBackfillEpochOperator: a backfill epoch over explicit ranges or the Trigger form.

Backfill epochs replay a historical range beside the stream: they never move the
stream cursor and never publish offsets to the consumer group. Planning the ranges is
:func:`airflow_provider_eo.ledger.backfill_plan.plan_backfill`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.ledger.backfill_plan import BackfillRequest
from airflow_provider_eo.ledger.protocol import EpochProtocol, Reservation
from airflow_provider_eo.ledger.recovery_plan import RunIdentity
from airflow_provider_eo.operators.reserve import ReserveEpochOperator


class ReserveBackfillEpochOperator(ReserveEpochOperator):
    """Reserve a backfill epoch (state RESERVED) for this DAG run.

    Ranges come from ``ranges`` when given, else from the run's params (the backfill
    DAG's Trigger form). Topics must belong to the pipeline; ranges must lie within the
    current watermarks (``InvalidRanges`` naming topic, partition and the available
    offsets). Nothing to replay: ``AirflowSkipException``. A retry in the same run gets
    the same epoch back. XCom: as :class:`ReserveEpochOperator`, with ``kind == "backfill"``.

    :param ranges: list of ``{topic, partition, start, end}`` or its JSON text (templated,
        e.g. ``"{{ params.ranges | tojson }}"``); None: use the run's params.
    """

    template_fields: Sequence[str] = ("pipeline", "pipelines_file", "ranges")

    def __init__(self, *, ranges: str | list[Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ranges = ranges

    def reserve(
        self, protocol: EpochProtocol, spec: PipelineSpec, run: RunIdentity, context: Context
    ) -> Reservation:
        request = BackfillRequest(ranges=self.ranges, params=context.get("params") or {})
        return protocol.reserve_backfill(spec, request, run)
