"""Announce committed epochs as events of the pipeline table's Asset (``airflow_provider_eo.assets``).

Airflow records a task's outlet events only when the task succeeds, and the ledger's
commit comes first, so the commit task announces its epoch on every success, a no-op
re-commit included (a retry after the ledger said COMMITTED must not leave the epoch
unannounced). Consumers therefore see each committed epoch at least once and deduplicate
on ``(pipeline, epoch_id)`` of the event's extra (docs/operators.md, "Assets").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow.sdk import Asset

from airflow_provider_eo.assets import epoch_event_extra, recommits_alias
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.protocol import Settled
from airflow_provider_eo.observability.epoch_metrics import report_committed


def announce_commit(context: Mapping[str, Any], asset: Asset, epoch: Epoch) -> None:
    """Set the extra of ``asset``'s event (emitted when the task succeeds) to ``epoch``'s summary."""
    context["outlet_events"][asset].extra = epoch_event_extra(epoch)


def announce_recommits(context: Mapping[str, Any], asset: Asset, epochs: Iterable[Epoch]) -> None:
    """One event of ``asset`` per epoch, through the task's :func:`recommits_alias` outlet
    (no epoch: no event)."""
    accessor = context["outlet_events"][recommits_alias(asset)]
    for epoch in epochs:
        accessor.add(asset, extra=epoch_event_extra(epoch))


def report_settled_commits(context: Mapping[str, Any], settled: Settled, asset: Asset | None) -> None:
    """After a recovery or release: send the metrics of each epoch it committed and announce
    each on ``asset`` (None: metrics only)."""
    for committed in settled.committed:
        report_committed(committed)
    if asset is not None:
        announce_recommits(context, asset, [c.epoch for c in settled.committed])
