"""``LedgerObservations``, a base of :class:`~.ledger.Ledger`: what the ledger observes
beside the state machine (lag samples) and the per-epoch figures the charts and the epoch
page read. Each public method is one short transaction; nothing here changes an epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from airflow_provider_eo.ledger.model.lag_samples import LagSample, SampledPartition
from airflow_provider_eo.ledger.model.refusals import EpochNotFound, PipelineNotFound
from airflow_provider_eo.ledger.store import epoch_points, lag_sample_rows
from airflow_provider_eo.ledger.store.epoch_points import EpochPoint
from airflow_provider_eo.ledger.store.lag_sample_rows import LagWindow


@dataclass(frozen=True)
class PipelineCharts:
    """A window of one pipeline: its newest committed epochs' figures (``epochs``, by id;
    ``epochs_in_window`` how many the window holds) and its lag samples from ``since``
    to ``until`` (the database's time of the read)."""

    epochs: list[EpochPoint]
    epochs_in_window: int
    lag: LagWindow
    since: datetime
    until: datetime


class LedgerObservations:
    """Lag samples and chart figures; mixed into ``Ledger`` (which provides ``_transaction``)."""

    _transaction: Callable[[], AbstractContextManager[Any]]

    def record_lag_sample(self, sample: LagSample) -> int:
        """Store ``sample`` (``ledger/model/lag_samples.py``); returns its id. Not a state change:
        no epoch moves, and a failure here leaves every epoch as it was."""
        with self._transaction() as cur:
            return lag_sample_rows.insert_lag_sample(cur, sample)

    def pipeline_charts(
        self,
        pipeline: str,
        *,
        since: datetime | None,
        last: int | None,
        max_epochs: int,
        max_samples: int,
        max_partitions: int,
    ) -> PipelineCharts:
        """The window of ``pipeline`` (committed at or after ``since``, or its ``last``
        committed epochs; lag samples from ``since``, or from the oldest of those epochs'
        creation) in one transaction of at most six statements; raises
        ``PipelineNotFound`` for a pipeline the ledger does not know."""
        with self._transaction() as cur:
            cur.execute("SELECT now(), EXISTS (SELECT 1 FROM eo.pipelines WHERE name = %s)", (pipeline,))
            until, known = cur.fetchone()
            if not known:
                raise PipelineNotFound(pipeline)
            ids, in_window = epoch_points.window_epoch_ids(
                cur, pipeline, since=since, last=last, limit=max_epochs
            )
            points = epoch_points.epoch_points(cur, ids)
            start = since or min((p.times.created_at for p in points), default=until)
            lag = lag_sample_rows.lag_window(
                cur, pipeline, start, max_samples=max_samples, max_partitions=max_partitions
            )
        return PipelineCharts(points, in_window, lag, start, until)

    def epoch_point(self, epoch_id: int) -> EpochPoint:
        """One epoch's figures (``store/epoch_points.py``); raises ``EpochNotFound``."""
        with self._transaction() as cur:
            found = epoch_points.epoch_points(cur, [epoch_id])
        if not found:
            raise EpochNotFound(epoch_id)
        return found[0]

    def epoch_lag_sample(self, epoch_id: int) -> tuple[datetime, tuple[SampledPartition, ...]] | None:
        """The lag sample taken after ``epoch_id``'s commit (time, every partition), or None."""
        with self._transaction() as cur:
            return lag_sample_rows.epoch_sample(cur, epoch_id)
