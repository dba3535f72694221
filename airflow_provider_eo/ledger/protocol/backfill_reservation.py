"""The backfill reservation transaction, as the protocol runs it: explicit ranges, never
touching cursors or pins; a run may hold several (its chunks) over disjoint ranges. What
to do with a run's request is decided by ``backfill_plan.run_epoch_or_none``; every
statement is the store's."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from airflow_provider_eo.ledger.model.epochs import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import OPEN_STATES, EpochKind, EpochState
from airflow_provider_eo.ledger.planning.backfill_plan import run_epoch_or_none
from airflow_provider_eo.ledger.planning.replay_plan import selection_of
from airflow_provider_eo.ledger.store.epoch_rows import EpochFilter, fetch_epochs, insert_epoch, lock_pipeline
from airflow_provider_eo.ledger.store.replay_rows import insert_selection


def reserve_backfill(
    cur: Any,
    pipeline: str,
    ranges: tuple[PartitionRange, ...],
    run: RunIdentity,
    watermarks: Mapping[TopicPartition, tuple[int, int]] | None = None,
) -> Epoch:
    """Insert a RESERVED backfill epoch for the run, unless the run already has these ranges.

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
    epoch = insert_epoch(cur, pipeline, EpochKind.BACKFILL, str(uuid.uuid4()), run.dag_id, run.run_id, plain)
    if selection is not None:
        insert_selection(cur, epoch.epoch_id, selection)
    return epoch
