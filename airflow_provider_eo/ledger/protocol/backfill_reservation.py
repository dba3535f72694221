"""A backfill's reads and its reservation transaction, as the protocol runs them.

:func:`plan_ranges` reads Kafka for a range request (``backfill_request.py``: the
partitions it chooses, the offsets of its timestamps, the watermarks) and hands the
answers to ``backfill_plan``'s pure decisions. :func:`reserve_backfill` is the
transaction: explicit ranges, never touching cursors or pins; a run may hold several
(its chunks) over disjoint ranges. What to do with a run's request is decided by
``backfill_plan.run_epoch_or_none``; every statement is the store's."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from airflow_provider_eo.config.spec_digest import spec_digest
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import OffsetSource, TopicPartition
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import OPEN_STATES, EpochKind, EpochState
from airflow_provider_eo.ledger.planning.backfill_plan import (
    BackfillPlan,
    check_pipeline_topics,
    chosen_partitions,
    run_epoch_or_none,
    timestamps_of,
    window_ranges,
)
from airflow_provider_eo.ledger.planning.backfill_request import ExplicitRanges, OffsetWindow, RangeRequest
from airflow_provider_eo.ledger.planning.replay_plan import selection_of
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epochs, insert_epoch, lock_pipeline
from airflow_provider_eo.ledger.store.replay_rows import insert_selection
from airflow_provider_eo.ledger.store.spec_rows import record_spec


def plan_ranges(spec: PipelineSpec, request: RangeRequest, kafka: OffsetSource) -> BackfillPlan:
    """The ranges ``request`` replays for ``spec``, sorted, with the watermarks of their
    partitions now (empty: nothing to replay, nothing checked).

    Raises ``ValueError`` naming the field, range or topic at fault (a chosen partition
    that does not exist, a start after its end, topics that are not the pipeline's) and
    Kafka errors. Ranges outside the watermarks are the ledger's ``InvalidRanges`` at
    reservation (``backfill_plan.validate_backfill_ranges``)."""
    if isinstance(request, ExplicitRanges):
        ranges = list(request.ranges)
    else:
        choice = request.choice
        listed = (
            kafka.list_partitions(list(choice.topics), None)
            if choice.topics
            else kafka.list_partitions(spec.topics, spec.topic_pattern)
        )
        tps = chosen_partitions(choice, listed)
        offsets_at = {ts: kafka.offsets_for_timestamp(tps, ts) for ts in timestamps_of(request)}
        open_ended = (
            isinstance(request, OffsetWindow)
            and request.end_offset is None
            and request.end_time is None
            and request.until is None
        )
        ranges = window_ranges(request, tps, offsets_at, kafka.watermarks(tps) if open_ended else {})
    if not ranges:
        return BackfillPlan((), {})
    check_pipeline_topics(spec.name, spec.topics, spec.topic_pattern, ranges)
    existing = kafka.list_partitions(sorted({r.topic for r in ranges}), None)
    watermarks = kafka.watermarks(sorted(set(existing) & {r.tp for r in ranges}))
    return BackfillPlan(tuple(sorted(ranges)), watermarks)


def reserve_backfill(
    cur: Any,
    pipeline: str,
    ranges: tuple[PartitionRange, ...],
    run: RunIdentity,
    watermarks: Mapping[TopicPartition, tuple[int, int]] | None = None,
    *,
    spec: PipelineSpec | None = None,
) -> Epoch:
    """Insert a RESERVED backfill epoch for the run, unless the run already has these ranges.
    A new epoch records ``spec``'s mapping (``spec_rows.record_spec``; None: none recorded).

    Under the pipeline's lock, against the run's own backfill epochs:

    * an open or COMMITTED epoch over exactly ``ranges`` is returned as it is (a retry
      of the chunk, or a cleared run resuming; ABORTED ones are ignored);
    * an open epoch overlapping ``ranges`` (same partition, shared offsets) is an
      ``OpenEpochConflict``: one run never writes the same offsets twice at once;
    * otherwise (disjoint ranges: the run's next chunk) a new epoch is inserted, after
      checking ``ranges`` against ``watermarks`` when given (``InvalidRanges``).

    Other runs' backfills may be open over any ranges at the same time.

    A replay chunk (ranges of ``replay_plan.SelectedRange``) is matched by its plain
    ranges, and a new epoch for it gets its selection (``eo.replay_selections``) in the
    same transaction: the offsets its write writes.
    """
    selection = selection_of(ranges)
    plain = tuple(PartitionRange(r.topic, r.partition, r.start, r.end) for r in ranges)
    lock_pipeline(cur, pipeline)
    mine = EpochFilter(
        pipeline=pipeline,
        kind=EpochKind.BACKFILL,
        states=OPEN_STATES | {EpochState.COMMITTED},
        dag_id=run.dag_id,
        run_id=run.run_id,
    )
    existing = run_epoch_or_none(pipeline, fetch_epochs(cur, mine), plain, watermarks)
    if existing is not None:
        return existing
    digest = None
    if spec is not None:
        digest = spec_digest(spec)
        record_spec(cur, pipeline, digest, spec.to_dict())
    epoch = insert_epoch(
        cur,
        pipeline,
        EpochKind.BACKFILL,
        str(uuid.uuid4()),
        run.dag_id,
        run.run_id,
        plain,
        spec_digest=digest,
    )
    if selection is not None:
        insert_selection(cur, epoch.epoch_id, selection)
    return epoch
