"""The stream reservation transaction (docs/DESIGN.md section 2, step 1).

Runs inside the caller's transaction, after the pipeline row is locked
(``SELECT ... FOR UPDATE``), so reservations of one pipeline are serialized.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from psycopg2.extras import execute_values

from airflow_provider_eo import protocol_points
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.errors import LedgerError, OpenEpochConflict
from airflow_provider_eo.ledger.models import Epoch
from airflow_provider_eo.ledger.offsets import OffsetSource, TopicPartition
from airflow_provider_eo.ledger.states import OPEN_STATES, EpochKind
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epochs, insert_epoch
from airflow_provider_eo.ledger.store.queries import cursors_by_pipeline
from airflow_provider_eo.ledger.stream_plan import choose_pins, plan_stream

log = logging.getLogger(__name__)


@dataclass
class StreamReservation:
    """Outcome of :func:`reserve_stream`: an epoch, or None with a deferred error.

    ``error`` is raised by the caller AFTER committing, so partitions pinned in this
    transaction stay pinned even when the reservation fails.
    """

    epoch: Epoch | None
    error: LedgerError | None = None


def lock_pipeline(cur: Any, pipeline: str) -> None:
    """Create the pipeline row if absent and lock it until the transaction ends."""
    cur.execute("INSERT INTO eo.pipelines (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (pipeline,))
    cur.execute("SELECT name FROM eo.pipelines WHERE name = %s FOR UPDATE", (pipeline,))


def reserve_stream(
    cur: Any, spec: PipelineSpec, offsets: OffsetSource, dag_id: str, run_id: str
) -> StreamReservation:
    """Reserve the next stream epoch of ``spec`` for the run ``(dag_id, run_id)``."""
    lock_pipeline(cur, spec.name)
    open_epochs = fetch_epochs(
        cur, pipeline=spec.name, kind=EpochKind.STREAM.value, states=[s.value for s in OPEN_STATES]
    )
    for existing in open_epochs:
        if (existing.dag_id, existing.run_id) == (dag_id, run_id):
            log.info("already reserved by this run epoch_id=%s pipeline=%s", existing.epoch_id, spec.name)
            return StreamReservation(existing)
        raise OpenEpochConflict(
            spec.name, existing.epoch_id, existing.state.value, existing.dag_id, existing.run_id
        )

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
    pinned = _pinned_partitions(cur, spec.name)
    _pin_new_partitions(cur, spec, offsets, listed, watermarks, first=not pinned, pinned=pinned)
    cursors = stream_cursors(cur, spec.name)
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
        epoch = insert_epoch(cur, spec.name, EpochKind.STREAM, token, dag_id, run_id, plan.ranges)
    for gap in plan.gaps:
        cur.execute(
            'INSERT INTO eo.gaps (pipeline, topic, "partition", start_offset, end_offset, epoch_id, reason)'
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (spec.name, gap.topic, gap.partition, gap.start, gap.end, epoch and epoch.epoch_id, "retention"),
        )
        log.warning(
            "pipeline %s: recorded gap %s[%s] [%s, %s) (data lost to retention)",
            spec.name, gap.topic, gap.partition, gap.start, gap.end,
        )  # fmt: skip
    protocol_points.passed("reserve.in_transaction")
    return StreamReservation(epoch)


def _pinned_partitions(cur: Any, pipeline: str) -> set[TopicPartition]:
    cur.execute('SELECT topic, "partition" FROM eo.partitions WHERE pipeline = %s', (pipeline,))
    return {(topic, partition) for topic, partition in cur.fetchall()}


def _pin_new_partitions(
    cur: Any,
    spec: PipelineSpec,
    offsets: OffsetSource,
    listed: list[TopicPartition],
    watermarks: dict[TopicPartition, tuple[int, int]],
    *,
    first: bool,
    pinned: set[TopicPartition],
) -> None:
    new_tps = [tp for tp in listed if tp not in pinned]
    if not new_tps:
        return
    policy = spec.starting.policy if first else spec.starting.new_partitions
    ts = spec.starting.timestamp_ms
    pins = choose_pins(
        new_tps,
        watermarks,
        first_reservation=first,
        starting=spec.starting,
        group_offsets=offsets.committed_offsets(spec.group_id, new_tps) if first else {},
        timestamp_offsets=offsets.offsets_for_timestamp(new_tps, ts)
        if policy == "timestamp" and ts is not None
        else {},
    )
    execute_values(
        cur,
        'INSERT INTO eo.partitions (pipeline, topic, "partition", initial_offset, initial_source) VALUES %s',
        [(spec.name, tp[0], tp[1], pin.offset, pin.source) for tp, pin in pins.items()],
    )
    for tp, pin in pins.items():
        log.info(
            "pipeline %s: pinned new partition %s[%s] at %s (%s)",
            spec.name,
            tp[0],
            tp[1],
            pin.offset,
            pin.source,
        )


def stream_cursors(cur: Any, pipeline: str) -> dict[TopicPartition, int]:
    """Cursor per pinned partition: greatest(initial offset, committed stream ends, gap ends)."""
    return cursors_by_pipeline(cur, pipeline).get(pipeline, {})
