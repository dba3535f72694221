"""The stream reservation transaction (docs/DESIGN.md section 2, step 1), as the protocol runs it.

Every decision is a planner's (``stream_plan``: resume or conflict, pins, ranges and
gaps); every statement is the store's; every broker read is here, its answers handed to
the planners as plain values. Runs inside the caller's transaction, after the
pipeline row is locked (``SELECT ... FOR UPDATE``), so reservations of one pipeline are
serialized. It issues a
fixed number of statements whatever the number of partitions (pins, ranges and gaps are
each one batched statement; cursors are read from ``eo.partitions``, store/cursors.py)
and three broker calls (list, two batched ListOffsets; plus the group's offsets on the
first reservation and a timestamp lookup when a new partition needs one).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from airflow_provider_eo import protocol_points
from airflow_provider_eo.config.spec_digest import spec_digest
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.offsets import OffsetSource, Pin, TopicPartition
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.refusals import LedgerError
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import OPEN_STATES, EpochKind
from airflow_provider_eo.ledger.planning.stream_plan import (
    choose_pins,
    plan_stream,
    resume_or_conflict,
    timestamp_to_look_up,
)
from airflow_provider_eo.ledger.store.cursors import pin_partitions, record_gaps, stream_cursors
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epochs, insert_epoch, lock_pipeline
from airflow_provider_eo.ledger.store.spec_rows import record_spec

log = logging.getLogger(__name__)


@dataclass
class StreamReservation:
    """Outcome of :func:`reserve_stream`: an epoch, or None with a deferred error.

    ``error`` is raised by the caller AFTER committing, so partitions pinned in this
    transaction stay pinned even when the reservation fails.
    """

    epoch: Epoch | None
    error: LedgerError | None = None


def reserve_stream(
    cur: Any, spec: PipelineSpec, offsets: OffsetSource, run: RunIdentity
) -> StreamReservation:
    """Reserve the next stream epoch of ``spec`` for ``run``: this run's open stream epoch
    again on a retry, a new one when there is new data, else None (``error`` set when a
    planner refused: ``OpenEpochConflict``, ``DataLossError``, ``CursorBeyondHighWatermark``)."""
    lock_pipeline(cur, spec.name)
    open_epochs = fetch_epochs(
        cur, EpochFilter(pipeline=spec.name, kind=EpochKind.STREAM, states=OPEN_STATES)
    )
    existing = resume_or_conflict(spec.name, open_epochs, run)
    if existing is not None:
        log.info("already reserved by this run epoch_id=%s pipeline=%s", existing.epoch_id, spec.name)
        return StreamReservation(existing)

    listed = sorted(set(offsets.list_partitions(list(spec.topics), spec.topic_pattern)))
    if not listed:
        log.info(
            "pipeline %s: no partitions match topics=%s pattern=%s",
            spec.name,
            spec.topics,
            spec.topic_pattern,
        )
        return StreamReservation(None)
    watermarks = offsets.watermarks(listed)
    cursors = stream_cursors(cur, spec.name)
    pins = new_pins(spec, offsets, listed, watermarks, pinned=cursors.keys())
    pin_partitions(cur, spec.name, pins)
    for tp, pin in pins.items():
        cursors[tp] = pin.offset
        log.info(
            "pipeline %s: pinned new partition %s[%s] at %s (%s)", spec.name, *tp, pin.offset, pin.source
        )
    try:
        plan = plan_stream(
            {tp: cursors[tp] for tp in listed},
            watermarks,
            spec.caps,
            record_gaps=spec.on_data_loss == "record_gap",
        )
    except LedgerError as exc:
        log.error("pipeline %s: reservation failed: %s", spec.name, exc)
        return StreamReservation(None, exc)
    epoch: Epoch | None = None
    if plan.has_data:
        token = str(uuid.uuid4())
        digest = spec_digest(spec)
        record_spec(cur, spec.name, digest, spec.to_dict())
        epoch = insert_epoch(
            cur, spec.name, EpochKind.STREAM, token, run.dag_id, run.run_id, plan.ranges, spec_digest=digest
        )
    record_gaps(cur, spec.name, plan.gaps, None if epoch is None else epoch.epoch_id, "retention")
    for gap in plan.gaps:
        log.warning(
            "pipeline %s: recorded gap %s[%s] [%s, %s) (data lost to retention)",
            spec.name, gap.topic, gap.partition, gap.start, gap.end,
        )  # fmt: skip
    protocol_points.passed("reserve.in_transaction")
    return StreamReservation(epoch)


def new_pins(
    spec: PipelineSpec,
    offsets: OffsetSource,
    listed: list[TopicPartition],
    watermarks: dict[TopicPartition, tuple[int, int]],
    *,
    pinned: Collection[TopicPartition],
) -> dict[TopicPartition, Pin]:
    """Starting offsets of the ``listed`` partitions not ``pinned`` yet, as
    ``stream_plan.choose_pins`` chooses them from what this reads: the group's committed
    offsets on the pipeline's first reservation (nothing ``pinned`` yet: one broker call), a timestamp's
    offsets for a timestamp policy (one); no call when every partition is pinned. Kafka
    errors propagate."""
    new_tps = [tp for tp in listed if tp not in pinned]
    if not new_tps:
        return {}
    first = not pinned
    ts = timestamp_to_look_up(spec.starting, first_reservation=first)
    return choose_pins(
        new_tps,
        watermarks,
        first_reservation=first,
        starting=spec.starting,
        group_offsets=offsets.committed_offsets(spec.group_id, new_tps) if first else {},
        timestamp_offsets=offsets.offsets_for_timestamp(new_tps, ts) if ts is not None else {},
    )
