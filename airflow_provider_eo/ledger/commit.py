"""Committing an epoch: publish its range ends to the consumer group, then mark COMMITTED.

Shared by ``CommitEpochOperator``, recovery and ``eo-ledger commit`` so every path
keeps the same order (docs/DESIGN.md section 2 step 3): the group learns offsets only for
data already durable in HBase, and the ledger records COMMITTED only after the group
has them. A crash between the two leaves the epoch WRITTEN; re-committing republishes
the same offsets (idempotent) and then marks it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from airflow_provider_eo import protocol_points
from airflow_provider_eo.ledger.errors import IllegalTransition
from airflow_provider_eo.ledger.ledger import Ledger
from airflow_provider_eo.ledger.models import Epoch
from airflow_provider_eo.ledger.offsets import OffsetPublisher, TopicPartition
from airflow_provider_eo.ledger.states import EpochKind, EpochState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CommitOutcome:
    """The committed epoch, what was published, and whether this call did anything."""

    epoch: Epoch
    published: dict[TopicPartition, int]
    already_committed: bool


def commit_epoch(ledger: Ledger, epoch_id: int, publisher: OffsetPublisher, group_id: str) -> CommitOutcome:
    """Commit ``epoch_id``: COMMITTED -> no-op success; WRITTEN -> publish + mark.

    Stream epochs publish exactly each range's end to ``group_id``; backfill epochs
    publish nothing (they never move the group). RESERVED/ABORTED epochs raise
    ``IllegalTransition`` before anything is published.
    """
    epoch = ledger.get_epoch(epoch_id)
    if epoch.state is EpochState.COMMITTED:
        log.info("epoch %s pipeline=%s already COMMITTED: nothing to do", epoch_id, epoch.pipeline)
        return CommitOutcome(epoch, {}, already_committed=True)
    if epoch.state is not EpochState.WRITTEN:
        hint = "the epoch has not been written yet" if epoch.state is EpochState.RESERVED else ""
        raise IllegalTransition(epoch_id, epoch.state.value, EpochState.COMMITTED.value, hint)
    published = epoch.end_offsets if epoch.kind is EpochKind.STREAM else {}
    protocol_points.passed("commit.before_publish")
    if published:
        publisher.commit_offsets(group_id, published)
        protocol_points.passed("commit.after_publish")
        log.info(
            "epoch %s pipeline=%s published %s to group %s", epoch_id, epoch.pipeline, published, group_id
        )
    return CommitOutcome(ledger.mark_committed(epoch_id), published, already_committed=False)
