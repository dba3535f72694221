"""Seek and reset of a pipeline's stream cursors, as the protocol runs them
(``EpochProtocol.seek`` / ``reset_to_group``; the runbook is docs/operations.md).

Every decision is the planner's (``seek_plan``); every statement the store's
(``store/cursor_moves.py``). Three steps, in this order:

1. **Check and plan**, changing nothing: the pipeline is known to the ledger and has no
   open epoch (RESERVED or WRITTEN, stream or backfill); the partitions are pinned; the
   targets are read from Kafka (watermarks, offsets for a timestamp, the group's offsets)
   and checked against the watermarks. Any refusal is ``SeekRefused``.
2. **One ledger transaction** under the pipeline's row lock (the lock reservations and
   commits take): the open-epoch check again, the cursors must still be where they were
   planned from, then the transaction declares itself a seek/reset (the 0004 trigger then
   lets a cursor move back and writes one ``eo.cursor_moves`` row per changed cursor with
   the ledger's actor and the reason), moves the cursors, and records every forward
   move's skipped range in ``eo.gaps`` (reason ``seek`` / ``reset``, no epoch).
3. **A seek then publishes** the new cursors of its partitions to the pipeline's
   consumer group (a reset takes them from the group: nothing to publish).

Why this order: the ledger's cursors are what the next stream epoch reads from; the
group only mirrors them for outside tools (``eo-ledger lag`` and Kafka's own tooling). A
crash after step 2 and before step 3 leaves the cursors moved and the group behind:
running the same seek again finds nothing to move and publishes the cursors again, and
the next committed stream epoch publishes its ranges' ends anyway. Publishing first
instead could leave a group ahead of a cursor that never moved (a refused or failed
transaction), which nothing would repair.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_eo.errors import KafkaAccessError
from airflow_provider_eo.ledger.model.ledger_roles import ScriptTransactions
from airflow_provider_eo.ledger.model.offsets import KafkaOffsets, TopicPartition
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.refusals import LedgerError, SeekRefused
from airflow_provider_eo.ledger.model.states import OPEN_STATES
from airflow_provider_eo.ledger.planning.seek_plan import (
    SeekPlan,
    SeekTarget,
    group_targets,
    plan_moves,
    refuse_open_epochs,
    select_partitions,
    target_offsets,
)
from airflow_provider_eo.ledger.store.cursor_moves import (
    lock_existing_pipeline,
    move_cursors,
    record_skipped,
)
from airflow_provider_eo.ledger.store.cursors import stream_cursors
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epochs, pipeline_known
from airflow_provider_eo.ledger.store.transaction_labels import declare_cursor_move

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SeekOutcome:
    """A seek or reset carried out: its plan, and the offsets published to ``group_id``."""

    plan: SeekPlan
    target: str
    reason: str
    group_id: str
    published: dict[TopicPartition, int]

    def to_json(self) -> dict[str, Any]:
        """The answer of ``eo-ledger seek`` / ``reset`` (partitions, gaps, group offsets)."""
        return {
            "pipeline": self.plan.pipeline,
            "kind": self.plan.kind,
            "to": self.target,
            "reason": self.reason,
            "partitions": [move.to_json() for move in self.plan.moves],
            "gaps_recorded": [
                {"topic": g.topic, "partition": g.partition, "start": g.start, "end": g.end}
                for g in self.plan.gaps
            ],
            "left_alone": [{"topic": t, "partition": p} for t, p in self.plan.left_alone],
            "group_id": self.group_id,
            "group_offsets_published": [
                {"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(self.published.items())
            ],
        }


def seek(
    ledger: ScriptTransactions,
    kafka: KafkaOffsets,
    pipeline: str,
    group_id: str,
    target: SeekTarget,
    partitions: Sequence[TopicPartition],
    reason: str,
) -> SeekOutcome:
    """Move the cursors of ``partitions`` (all pinned ones when empty) to ``target``,
    then publish them to ``group_id``. ``SeekRefused`` (nothing changed) for every
    refusal; a Kafka error publishing to the group after the ledger committed says so
    (the group is behind the cursors: the same seek again publishes them)."""
    cursors = _checked_cursors(ledger, pipeline)
    tps = select_partitions(pipeline, cursors, partitions)
    watermarks = kafka.watermarks(tps)
    by_timestamp = None
    if target.kind == "timestamp":
        assert target.value is not None
        by_timestamp = kafka.offsets_for_timestamp(tps, target.value)
    plan = plan_moves(pipeline, "seek", cursors, target_offsets(target, tps, watermarks, by_timestamp))
    _apply(ledger, plan, reason)
    published = {move.tp: move.to_offset for move in plan.moves}
    try:
        kafka.commit_offsets(group_id, published)
    except KafkaAccessError as exc:  # the ledger has moved: say so, and how to finish
        raise type(exc)(
            f"pipeline {pipeline!r}: the cursors moved in the ledger, but publishing them to group "
            f"{group_id!r} failed ({exc}); run the same seek again to publish them"
        ) from exc
    log.info("seek published pipeline=%s group=%s offsets=%s", pipeline, group_id, sorted(published.items()))
    return SeekOutcome(plan, str(target), reason, group_id, published)


def reset_to_group(
    ledger: ScriptTransactions,
    kafka: KafkaOffsets,
    pipeline: str,
    group_id: str,
    partitions: Sequence[TopicPartition],
    reason: str,
) -> SeekOutcome:
    """Move the cursors of ``partitions`` (all pinned ones when empty) to ``group_id``'s
    committed offsets; partitions without one are left alone (``plan.left_alone``).
    ``SeekRefused`` (nothing changed) for every refusal, e.g. a group offset outside the
    partition's watermarks."""
    cursors = _checked_cursors(ledger, pipeline)
    tps = select_partitions(pipeline, cursors, partitions)
    committed = kafka.committed_offsets(group_id, tps)
    watermarks = kafka.watermarks([tp for tp in tps if committed.get(tp) is not None])
    targets, unset = group_targets({tp: committed.get(tp) for tp in tps}, watermarks)
    plan = plan_moves(pipeline, "reset", cursors, targets, unset)
    _apply(ledger, plan, reason)
    return SeekOutcome(plan, f"group:{group_id}", reason, group_id, {})


def _checked_cursors(ledger: ScriptTransactions, pipeline: str) -> dict[TopicPartition, int]:
    """The pipeline's cursors, after refusing an unknown pipeline or one with open epochs."""
    with ledger.transaction() as cur:
        if not pipeline_known(cur, pipeline):
            raise SeekRefused(
                f"pipeline {pipeline!r} is unknown to the ledger (eo-ledger pipelines lists them)"
            )
        refuse_open_epochs(pipeline, fetch_epochs(cur, EpochFilter(pipeline=pipeline, states=OPEN_STATES)))
        return stream_cursors(cur, pipeline)


def _apply(ledger: ScriptTransactions, plan: SeekPlan, reason: str) -> None:
    """The plan's ledger transaction (step 2 of the module doc)."""
    with ledger.transaction() as cur:
        if not lock_existing_pipeline(cur, plan.pipeline):
            raise SeekRefused(f"pipeline {plan.pipeline!r} is unknown to the ledger")
        open_epochs = fetch_epochs(cur, EpochFilter(pipeline=plan.pipeline, states=OPEN_STATES))
        refuse_open_epochs(plan.pipeline, open_epochs)
        now = stream_cursors(cur, plan.pipeline)
        stale = [m for m in plan.moves if now.get(m.tp) != m.from_offset]
        if stale:
            named = ", ".join(f"{m.topic}[{m.partition}] {m.from_offset} -> {now.get(m.tp)}" for m in stale)
            raise SeekRefused(
                f"pipeline {plan.pipeline!r}: cursors moved while planning ({named}); run again"
            )
        declare_cursor_move(cur, plan.kind, reason)
        changes = plan.changes
        moved = move_cursors(
            cur, plan.pipeline, [(m.topic, m.partition, m.from_offset, m.to_offset) for m in changes]
        )
        if moved != len(changes):  # cannot happen under the lock: roll back rather than half-move
            raise LedgerError(f"pipeline {plan.pipeline!r}: {moved} of {len(changes)} cursors moved")
        record_skipped(cur, plan.pipeline, plan.gaps, plan.kind)
    for move in changes:
        log.warning(
            "%s moved cursor pipeline=%s partition=%s[%s] from=%s to=%s reason=%s",
            plan.kind, plan.pipeline, move.topic, move.partition, move.from_offset, move.to_offset, reason,
        )  # fmt: skip
    for gap in plan.gaps:
        log.warning(
            "%s recorded gap pipeline=%s partition=%s[%s] range=[%s, %s)",
            plan.kind, plan.pipeline, gap.topic, gap.partition, gap.start, gap.end,
        )  # fmt: skip
