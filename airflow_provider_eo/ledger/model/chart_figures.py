"""What the charts and an epoch's page show, as values: per-epoch figures
(:class:`EpochPoint`), stored lag samples (:class:`StoredSample`, a window of them:
:class:`LagWindow`) and one pipeline's window of both (:class:`PipelineCharts`). The
store reads them (``ledger/store/epoch_points.py``, ``ledger/store/lag_sample_rows.py``)
behind :class:`~.ledger_roles.LedgerReads`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from airflow_provider_eo.ledger.model.lag import SampledPartition
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.phases import EpochTimes


@dataclass(frozen=True)
class EpochPoint:
    """One epoch's figures from its vote (None before it): ``records`` read by its write,
    ``dead_letters`` the records it dead-lettered (``bad_records``: what the epoch itself
    rejected, which a later replay of the same offsets does not change), and its
    :class:`EpochTimes`."""

    epoch_id: int
    kind: str
    state: str
    records: int | None
    dead_letters: int | None
    times: EpochTimes


@dataclass(frozen=True)
class StoredSample:
    """A sample as the charts read it: its header and the shown partitions' rows."""

    sample_id: int
    sampled_at: datetime
    source: str
    epoch_id: int | None
    partitions: int
    total_lag: int
    shown: tuple[SampledPartition, ...]


@dataclass(frozen=True)
class LagWindow:
    """The samples of a window the charts show, oldest first.

    ``in_window``: samples the window holds; ``every``: 1 when all are shown, else k
    (every k-th, counted from the newest); ``partitions``: the newest sample's partition
    count; ``shown_partitions``: the partitions whose rows ``samples`` carry.
    """

    samples: tuple[StoredSample, ...]
    in_window: int
    every: int
    partitions: int
    shown_partitions: tuple[TopicPartition, ...]


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
