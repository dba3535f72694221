"""The read model in PostgreSQL (``LedgerReads``, ``ledger/model/ledger_roles.py``): what
the ``eo-ledger`` CLI and the Epochs UI read. Each call is one short transaction (a fixed
number of statements whatever the number of pipelines or epochs); nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from airflow_provider_eo.ledger.model.chart_figures import EpochPoint, PipelineCharts
from airflow_provider_eo.ledger.model.epoch import DeadLetter
from airflow_provider_eo.ledger.model.history import HistoryEvent, Transition
from airflow_provider_eo.ledger.model.lag import SampledPartition
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.read_model import PipelineOverview
from airflow_provider_eo.ledger.model.refusals import EpochNotFound, PipelineNotFound
from airflow_provider_eo.ledger.store import (
    dead_letter_rows,
    epoch_points,
    history_rows,
    lag_sample_rows,
    queries,
    spec_rows,
)
from airflow_provider_eo.ledger.store.cursors import stream_cursors
from airflow_provider_eo.ledger.store.epoch_lookup import PostgresEpochLookup
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epoch, pipeline_known


class PostgresReads(PostgresEpochLookup):
    """Epochs, histories, overviews, cursors, gaps, dead letters and chart figures."""

    def pipeline_spec(self, digest: str) -> dict[str, Any] | None:
        """The spec recorded under ``digest`` (``spec_rows.fetch_spec``), or None."""
        with self._db.transaction() as cur:
            return spec_rows.fetch_spec(cur, digest)

    def history(self, epoch_id: int) -> list[Transition]:
        """The epoch's transitions, oldest first (its creation first); raises ``EpochNotFound``."""
        with self._db.transaction() as cur:
            fetch_epoch(cur, epoch_id)
            return history_rows.epoch_history(cur, epoch_id)

    def histories(self, epoch_ids: Sequence[int]) -> dict[int, list[Transition]]:
        """The transitions of each epoch of ``epoch_ids`` (oldest first) in one statement."""
        with self._db.transaction() as cur:
            return history_rows.epochs_history(cur, epoch_ids)

    def pipeline_history(self, pipeline: str, limit: int = 100) -> list[HistoryEvent]:
        """The ``limit`` newest transitions and cursor moves of ``pipeline``, newest first;
        raises ``LookupError`` for a pipeline the ledger does not know and ``ValueError``
        for ``limit < 1``."""
        if limit < 1:
            raise ValueError(f"limit must be >= 1, not {limit}")
        with self._db.transaction() as cur:
            if not pipeline_known(cur, pipeline):
                raise LookupError(f"unknown pipeline: {pipeline}")
            return history_rows.pipeline_history(cur, pipeline, limit)

    def pipeline_overviews(self, pipeline: str | None = None) -> list[PipelineOverview]:
        """Every pipeline's overview (or only ``pipeline``'s; [] if unknown), sorted by name,
        in one transaction of a fixed number of statements."""
        with self._db.transaction() as cur:
            return queries.pipeline_overviews(cur, pipeline)

    def list_pipelines(self) -> list[str]:
        """Names of pipelines known to the ledger, sorted."""
        with self._db.transaction() as cur:
            return queries.pipeline_names(cur)

    def cursors(self, pipeline: str) -> dict[TopicPartition, int]:
        """Next stream offset per pinned partition of ``pipeline``."""
        with self._db.transaction() as cur:
            return stream_cursors(cur, pipeline)

    def gaps(self, pipeline: str) -> list[dict[str, Any]]:
        """Recorded data-loss gaps of ``pipeline`` (JSON-serializable)."""
        with self._db.transaction() as cur:
            return [gap.to_json() for gap in queries.gaps_by_pipeline(cur, pipeline).get(pipeline, [])]

    def dead_letter_count(self, pipeline: str, epoch_id: int | None = None) -> int:
        """Number of dead letters of ``pipeline`` (of one epoch if given)."""
        with self._db.transaction() as cur:
            return dead_letter_rows.count_dead_letters(cur, pipeline, epoch_id)

    def list_dead_letters(self, pipeline: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Dead letters of ``pipeline`` as JSON-serializable dicts."""
        with self._db.transaction() as cur:
            return dead_letter_rows.list_dead_letters(cur, pipeline, limit)

    def dead_letter_offsets(
        self,
        pipeline: str,
        topic: str,
        partition: int,
        start: int,
        end: int,
        *,
        not_resolved_by: int | None = None,
    ) -> list[int]:
        """Offsets in ``[start, end)`` of one partition holding a dead letter of ``pipeline``
        (``not_resolved_by``: without those that replay epoch wrote), ascending."""
        with self._db.transaction() as cur:
            return dead_letter_rows.dead_letter_offsets(
                cur, pipeline, topic, partition, start, end, not_resolved_by=not_resolved_by
            )

    def dead_letters_in_range(
        self, pipeline: str, topic: str, partition: int, start: int, end: int
    ) -> list[tuple[int | None, DeadLetter]]:
        """``(publish_seq or None, letter)`` of ``pipeline``'s dead letters in ``[start, end)``
        of one partition, by offset."""
        with self._db.transaction() as cur:
            return dead_letter_rows.dead_letters_in_range(cur, pipeline, topic, partition, start, end)

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
        with self._db.transaction() as cur:
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
        with self._db.transaction() as cur:
            found = epoch_points.epoch_points(cur, [epoch_id])
        if not found:
            raise EpochNotFound(epoch_id)
        return found[0]

    def epoch_lag_sample(self, epoch_id: int) -> tuple[datetime, tuple[SampledPartition, ...]] | None:
        """The lag sample taken after ``epoch_id``'s commit (time, every partition), or None."""
        with self._db.transaction() as cur:
            return lag_sample_rows.epoch_sample(cur, epoch_id)
