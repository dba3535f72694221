"""ReserveBackfillEpochOperator: one backfill epoch over explicit ranges, the Trigger form
or the run's data interval; :func:`backfill_request`: what a backfill run asks for.

Backfill epochs replay a historical range beside the stream: they never move the
stream cursor and never publish offsets to the consumer group. Reading the run's forms
into a typed request is ``backfill_request_form.py``'s; planning its ranges is the
protocol's (``ledger/protocol/backfill_reservation.py``). The backfill DAG itself writes
a run as chunks (``backfill_chunks.py``); this operator is the one-epoch form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import Context

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.planning.backfill_request import BackfillRequest
from airflow_provider_eo.ledger.protocol import EpochProtocol, Reservation
from airflow_provider_eo.operators.backfill_request_form import CONF_KEY, request_of
from airflow_provider_eo.operators.reserve import ReserveEpochOperator


def backfill_request(
    context: Mapping[str, Any], ranges: str | Sequence[Any] | None = None
) -> BackfillRequest:
    """The request of the running task: ``ranges`` when given; the run's params (the
    Trigger form, plus the run conf's ``replay_dead_letters``, a replay's filter that is no
    form field); and, for a run Airflow's backfill created (run type ``backfill``), its
    data interval, which then is the range (``backfill_request_form.request_of``;
    ``ValueError`` naming the param at fault)."""
    dag_run = context.get("dag_run")
    run_type = getattr(dag_run, "run_type", None)
    interval = None
    if getattr(run_type, "value", run_type) == "backfill":
        interval = (dag_run.data_interval_start, dag_run.data_interval_end)  # type: ignore[union-attr]
    params = dict(context.get("params") or {})
    conf = getattr(dag_run, "conf", None) or {}
    if conf.get(CONF_KEY) is not None:
        params.setdefault(CONF_KEY, conf[CONF_KEY])
    return request_of(ranges, params, interval, getattr(dag_run, "run_after", None))


class ReserveBackfillEpochOperator(ReserveEpochOperator):
    """Reserve a backfill epoch (state RESERVED) for this DAG run.

    Ranges come from ``ranges`` when given, else from the run's data interval (a run of
    Airflow's backfill) or params (the Trigger form): :func:`backfill_request`. Topics
    must belong to the pipeline; ranges must lie within the current watermarks
    (``InvalidRanges`` naming topic, partition and the available offsets). Nothing to
    replay: ``AirflowSkipException``. A retry in the same run gets the same epoch back
    (ranges this run already committed: that COMMITTED epoch). XCom: as
    :class:`ReserveEpochOperator`, with ``kind == "backfill"``.

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
        return protocol.reserve_backfill(spec, backfill_request(context, self.ranges), run)
