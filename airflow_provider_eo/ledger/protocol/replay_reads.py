"""The protocol's replay of dead letters (``EpochProtocol`` and ``OperatorTools`` call these).

A replay is a backfill: :func:`checked_replay_plan` plans its chunks (ranges of
``replay_plan.SelectedRange``), which ``EpochProtocol.reserve_backfill`` reserves like any
chunk (the reservation stores the selection), the Spark driver writes only the selection
(:func:`replay_selection`) and the commit resolves the dead letters it wrote
(``store.commit_statements.mark_committed``). Reads here are one short transaction each;
the watermarks a plan is checked against are read here too and handed to the planner.
"""

from __future__ import annotations

import logging

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.ledger_roles import ScriptTransactions
from airflow_provider_eo.ledger.model.offsets import OffsetSource, TopicPartition
from airflow_provider_eo.ledger.planning.backfill_plan import validate_backfill_ranges
from airflow_provider_eo.ledger.planning.replay_plan import (
    Candidate,
    ReplayFilter,
    ReplayPlan,
    plan_replay,
)
from airflow_provider_eo.ledger.store.replay_rows import fetch_selection, select_dead_letters

log = logging.getLogger(__name__)


def replay_plan(ledger: ScriptTransactions, spec: PipelineSpec, wanted: ReplayFilter) -> ReplayPlan:
    """What replaying ``wanted`` of ``spec``'s dead letters writes, in chunks of at most
    ``spec.backfill.max_records_per_epoch`` offsets. Reads the ledger only."""
    with ledger.transaction() as cur:
        rows = select_dead_letters(cur, spec.name, **wanted.given())
    plan = plan_replay([Candidate(*row) for row in rows], spec.backfill.max_records_per_epoch)
    log.info(
        "planned replay pipeline=%s filter=%s records=%d chunks=%d already_resolved=%d resolved_by=%s",
        spec.name, wanted.given(), plan.record_count, len(plan.chunks), plan.already_resolved,
        list(plan.resolved_by),
    )  # fmt: skip
    return plan


def checked_replay_plan(
    ledger: ScriptTransactions, spec: PipelineSpec, wanted: ReplayFilter, kafka: OffsetSource
) -> ReplayPlan:
    """:func:`replay_plan`, its chunks checked against the partitions' watermarks now:
    ``InvalidRanges`` when a selected record is no longer in Kafka (retention). Nothing
    to replay: no chunk, and the reason logged."""
    plan = replay_plan(ledger, spec, wanted)
    refusal = plan.refusal(spec.name, wanted)
    if refusal is not None:
        log.info("nothing to replay: %s", refusal)
    if plan.chunks:
        watermarks = kafka.watermarks(sorted(plan.selected))
        for chunk in plan.chunks:
            validate_backfill_ranges(chunk, watermarks)
    return plan


def replay_selection(
    ledger: ScriptTransactions, epoch_id: int
) -> dict[TopicPartition, tuple[int, ...]] | None:
    """The offsets epoch ``epoch_id`` writes per partition (None: all of its ranges)."""
    with ledger.transaction() as cur:
        return fetch_selection(cur, epoch_id)
