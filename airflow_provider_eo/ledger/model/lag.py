"""Lag: the one definition the CLI (``eo-ledger lag``), the Epochs page and the epoch
metrics (``eo.partition.lag``) share (:func:`lag`), and lag samples: a pipeline's cursors
against the high watermarks at one moment, as values.

A sample is taken where the provider already reads both, never with a broker call of
its own: after a stream epoch's commit (``source`` ``"commit"``: the epoch's range ends,
the partitions' new cursors, against the watermarks the lag metric reads) and at a poll
of the wait step (``"wait"``: the ledger's cursors against the watermarks the pending
rule reads). Per partition ``lag = max(high_watermark - cursor, 0)`` (:func:`lag`).

Bounds: a commit sample has one row per range of its epoch (the rows its ranges already
take); wait samples of one wait are stored at most every :func:`wait_sample_interval`
seconds, which grows with the number of partitions (about 100 partition rows per minute
per pipeline at most).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.offsets import TopicPartition

log = logging.getLogger(__name__)


def lag(position: int, high_watermark: int) -> int:
    """Offsets from ``position`` (a stream cursor, or a committed range's end) up to the
    partition's high watermark; never negative (a position past the high watermark, as
    after a topic was re-created, is no lag)."""
    return max(high_watermark - position, 0)


LagSource = Literal["commit", "wait"]

#: Partition rows per minute a pipeline's wait samples may add (see wait_sample_interval).
WAIT_SAMPLE_ROWS_PER_MINUTE = 100
#: The shortest time between two stored wait samples of one wait, in seconds.
WAIT_SAMPLE_MIN_SECONDS = 60.0


@dataclass(frozen=True, order=True)
class SampledPartition:
    """One partition of a sample: its cursor (or committed end), high watermark and lag."""

    topic: str
    partition: int
    cursor: int
    high_watermark: int
    lag: int


@dataclass(frozen=True)
class LagSample:
    """One sample of ``pipeline`` (partitions sorted by topic and partition); ``epoch_id``
    is the committed epoch of a ``"commit"`` sample, None for a ``"wait"`` sample."""

    pipeline: str
    source: LagSource
    epoch_id: int | None
    partitions: tuple[SampledPartition, ...]

    @property
    def total_lag(self) -> int:
        """The sum of the partitions' lag."""
        return sum(p.lag for p in self.partitions)


class LagSampleSink(Protocol):
    """Where samples are stored (:class:`~airflow_provider_eo.ledger.store.postgres_ledger.Ledger` is one)."""

    def record_lag_sample(self, sample: LagSample) -> int:
        """Store ``sample``; returns its id."""
        ...


def partition_lags(positions: Iterable[tuple[TopicPartition, int, int]]) -> tuple[SampledPartition, ...]:
    """``(tp, cursor, high_watermark)`` triples as sorted :class:`SampledPartition` values."""
    return tuple(
        sorted(SampledPartition(t, p, cursor, high, lag(cursor, high)) for (t, p), cursor, high in positions)
    )


def commit_sample(epoch: Epoch, highs: Mapping[TopicPartition, int]) -> LagSample | None:
    """The sample of a just committed stream ``epoch``: each range's end against ``highs``
    (high watermark per partition); ranges without a watermark are left out. None when no
    range has one."""
    found = partition_lags((r.tp, r.end, highs[r.tp]) for r in epoch.ranges if r.tp in highs)
    return LagSample(epoch.pipeline, "commit", epoch.epoch_id, found) if found else None


def wait_sample(
    pipeline: str,
    cursors: Mapping[TopicPartition, int],
    watermarks: Mapping[TopicPartition, tuple[int, int]],
) -> LagSample | None:
    """The sample of a wait poll: every pinned partition that has watermarks (``(low,
    high)``), its cursor against its high watermark. None when there is none."""
    found = partition_lags((tp, cursors[tp], watermarks[tp][1]) for tp in cursors if tp in watermarks)
    return LagSample(pipeline, "wait", None, found) if found else None


def wait_sample_interval(partitions: int) -> float:
    """Seconds between two stored wait samples of a pipeline with ``partitions`` partitions:
    :data:`WAIT_SAMPLE_MIN_SECONDS`, longer when ``partitions`` rows every minute would
    exceed :data:`WAIT_SAMPLE_ROWS_PER_MINUTE` (10,000 partitions: one sample every 100
    minutes)."""
    return WAIT_SAMPLE_MIN_SECONDS * max(1, math.ceil(partitions / WAIT_SAMPLE_ROWS_PER_MINUTE))


def store_sample(sink: LagSampleSink, sample: LagSample | None, where: str) -> bool:
    """Store ``sample`` (None: nothing to store) in ``sink``; never raises: a failure is a
    warning naming the pipeline, the source and ``where`` (epoch id, ranges). Returns
    whether it was stored."""
    if sample is None:
        return False
    try:
        sink.record_lag_sample(sample)
    except Exception as exc:
        log.warning(
            "lag sample not stored pipeline=%s source=%s %s: %s: %s",
            sample.pipeline, sample.source, where, type(exc).__name__, exc,
        )  # fmt: skip
        return False
    return True
