"""Reservation of backfill epochs: explicit ranges, never touching cursors or pins; a run
may hold several (its chunks) over disjoint ranges."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_eo.ledger.errors import InvalidRanges, OpenEpochConflict
from airflow_provider_eo.ledger.models import Epoch, PartitionRange
from airflow_provider_eo.ledger.offsets import TopicPartition
from airflow_provider_eo.ledger.states import OPEN_STATES, EpochKind, EpochState
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epochs, insert_epoch
from airflow_provider_eo.ledger.store.stream_reserver import lock_pipeline


def validate_backfill_ranges(
    ranges: Iterable[PartitionRange], watermarks: Mapping[TopicPartition, tuple[int, int]] | None = None
) -> tuple[PartitionRange, ...]:
    """Sorted ranges; each must have 0 <= start < end, one per partition, and lie within
    ``[low, high]`` when ``watermarks`` are given. Raises ``InvalidRanges``."""
    checked = tuple(sorted(ranges))
    if not checked:
        raise InvalidRanges("a backfill needs at least one range")
    seen: set[TopicPartition] = set()
    for r in checked:
        if r.start < 0 or r.start >= r.end:
            raise InvalidRanges(
                f"range {r.topic}[{r.partition}] [{r.start}, {r.end}) must have 0 <= start < end"
            )
        if r.tp in seen:
            raise InvalidRanges(f"partition {r.topic}[{r.partition}] appears in more than one range")
        seen.add(r.tp)
        if watermarks is not None:
            if r.tp not in watermarks:
                raise InvalidRanges(f"partition {r.topic}[{r.partition}] does not exist")
            low, high = watermarks[r.tp]
            if r.start < low or r.end > high:
                raise InvalidRanges(
                    f"range {r.topic}[{r.partition}] [{r.start}, {r.end}) is outside the available "
                    f"offsets [{low}, {high})"
                )
    return checked


def reserve_backfill(
    cur: Any,
    pipeline: str,
    ranges: tuple[PartitionRange, ...],
    dag_id: str,
    run_id: str,
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
    """
    lock_pipeline(cur, pipeline)
    mine = fetch_epochs(
        cur,
        pipeline=pipeline,
        kind=EpochKind.BACKFILL.value,
        states=[*(s.value for s in OPEN_STATES), EpochState.COMMITTED.value],
        dag_id=dag_id,
        run_id=run_id,
    )
    for epoch in mine:
        if epoch.ranges == ranges:
            return epoch
    for epoch in mine:
        if epoch.state in OPEN_STATES and _overlap(epoch.ranges, ranges):
            raise OpenEpochConflict(pipeline, epoch.epoch_id, epoch.state.value, epoch.dag_id, epoch.run_id)
    if watermarks is not None:
        validate_backfill_ranges(ranges, watermarks)
    return insert_epoch(cur, pipeline, EpochKind.BACKFILL, str(uuid.uuid4()), dag_id, run_id, ranges)


def _overlap(held: Iterable[PartitionRange], wanted: Iterable[PartitionRange]) -> bool:
    """Whether any two ranges of one partition share an offset."""
    wanted_by_tp = {r.tp: r for r in wanted}
    return any(
        (other := wanted_by_tp.get(r.tp)) is not None and r.start < other.end and other.start < r.end
        for r in held
    )
