"""What a backfill run asks for, as typed values the protocol takes.

A request is one of:

* :class:`ExplicitRanges`: exactly these ranges (a chunk of a planned run, or ranges an
  operator was given);
* :class:`OffsetWindow`: the chosen partitions from a start (an offset or a time) to an
  end (an offset, a time, or none);
* :class:`DataInterval`: the chosen partitions' records whose Kafka timestamps fall in
  ``[start, end)`` (a run Airflow's backfill created);
* :class:`~airflow_provider_eo.ledger.planning.replay_plan.ReplayFilter`: dead letters to
  replay.

Where these come from (the backfill DAG's Trigger form, the run conf, an operator's
``ranges`` argument, the ``eo-ledger`` CLI) is the adapters' business
(``operators/backfill_request_form.py``); nothing here knows Airflow. Each value checks
its own consistency on construction and raises ``ValueError`` naming the field at fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from airflow_provider_eo.ledger.model.epoch import PartitionRange
from airflow_provider_eo.ledger.planning.replay_plan import ReplayFilter


@dataclass(frozen=True)
class PartitionChoice:
    """Which partitions a window or interval covers: of ``topics`` (empty: the pipeline's
    topics or pattern), the ``partitions`` numbers (empty: every partition)."""

    topics: tuple[str, ...] = ()
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True)
class ExplicitRanges:
    """Exactly ``ranges`` (``PartitionRange``, or ``replay_plan.SelectedRange`` for a
    replay chunk), in the order given."""

    ranges: tuple[PartitionRange, ...]


@dataclass(frozen=True)
class OffsetWindow:
    """From exactly one of ``start_offset`` / ``start_time`` to at most one of
    ``end_offset`` / ``end_time`` on each chosen partition. No end: the first record
    stamped at or after ``until`` (when the run was created, so every plan of the run
    covers the same records), or with no ``until`` each partition's high watermark.
    Times without a zone are UTC. ``ValueError`` when the bounds are not given so."""

    choice: PartitionChoice = PartitionChoice()
    start_offset: int | None = None
    start_time: datetime | None = None
    end_offset: int | None = None
    end_time: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        if (self.start_offset is None) == (self.start_time is None):
            raise ValueError("backfill params: give exactly one of 'start_offset' and 'start_time'")
        if self.end_offset is not None and self.end_time is not None:
            raise ValueError("backfill params: give at most one of 'end_offset' and 'end_time'")


@dataclass(frozen=True)
class DataInterval:
    """The chosen partitions' records stamped in ``[start, end)`` (timezone-aware).
    ``ValueError`` when the interval ends before it starts."""

    start: datetime
    end: datetime
    choice: PartitionChoice = PartitionChoice()

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(
                f"backfill data interval ends ({self.end.isoformat()}) before it starts "
                f"({self.start.isoformat()})"
            )


#: What :meth:`EpochProtocol.plan_backfill` / ``reserve_backfill`` take.
BackfillRequest = ExplicitRanges | OffsetWindow | DataInterval | ReplayFilter
#: The requests that are ranges of offsets (all but a replay).
RangeRequest = ExplicitRanges | OffsetWindow | DataInterval
