"""Where an epoch's time goes: its life from reservation to commit, cut into five phases.

=================  =================================================================
``reserve``        the reservation transaction: ``created_at`` (its start) to the
                   epoch's creation in its history (partitions, watermarks, caps, insert)
``wait_for_spark`` from the reservation to the first Spark task: the write task's
                   scheduling, spark-submit, the JVM, the SparkContext, the lease
``spark_tasks``    the Spark job: its tasks' submission to the last task's result
``wait_for_commit`` from the last task's result to the commit step: Spark's stop, the
                   vote, the write task's end, the commit task's scheduling
``commit``         the commit step: publishing the group's offsets, marking COMMITTED
=================  =================================================================

The five tile ``[created_at, committed_at]`` exactly. Every boundary is on the database's
clock: the reservation's start and creation, the vote (``written_at``) and the commit
(``committed_at``) are the database's times, and the two boundaries measured elsewhere
are stored as durations on a monotonic clock and placed from a database time (the Spark
job: ``spark_tasks_s`` and ``vote_after_tasks_s`` of the vote's metrics, before
``written_at``; the commit step's start: ``commit_started_at``, ``committed_at`` minus
the step's measured duration). So clock skew between hosts cannot distort them.

What an epoch does not record is ``None`` (unknown), never zero: epochs voted before the
vote carried the Spark job's times, committed before ``commit_started_at`` existed, or
created before the history (migration 0004).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

PHASES = ("reserve", "wait_for_spark", "spark_tasks", "wait_for_commit", "commit")
#: The phases as the page names them.
PHASE_LABELS = {
    "reserve": "reserve",
    "wait_for_spark": "wait for Spark",
    "spark_tasks": "Spark tasks",
    "wait_for_commit": "wait for commit",
    "commit": "commit",
}


@dataclass(frozen=True)
class EpochTimes:
    """The moments of one epoch's life the ledger holds (None: not recorded or not reached).

    ``reserved_at``: its creation in the history (None before migration 0004);
    ``spark_tasks_s`` / ``vote_after_tasks_s``: from the vote's metrics.
    """

    created_at: datetime
    reserved_at: datetime | None
    written_at: datetime | None
    committed_at: datetime | None
    commit_started_at: datetime | None
    spark_tasks_s: float | None
    vote_after_tasks_s: float | None

    @classmethod
    def of(
        cls,
        created_at: datetime,
        reserved_at: datetime | None,
        written_at: datetime | None,
        committed_at: datetime | None,
        commit_started_at: datetime | None,
        metrics: dict[str, Any] | None,
    ) -> EpochTimes:
        """The times, the two Spark durations read from the vote's ``metrics``."""
        found = metrics or {}
        return cls(
            created_at, reserved_at, written_at, committed_at, commit_started_at,
            _seconds(found.get("spark_tasks_s")), _seconds(found.get("vote_after_tasks_s")),
        )  # fmt: skip

    @property
    def tasks_ended_at(self) -> datetime | None:
        """When the Spark job's last task result arrived (database clock)."""
        if self.written_at is None or self.vote_after_tasks_s is None:
            return None
        return self.written_at - timedelta(seconds=self.vote_after_tasks_s)

    @property
    def tasks_started_at(self) -> datetime | None:
        """When the Spark job's tasks were submitted (database clock)."""
        ended = self.tasks_ended_at
        if ended is None or self.spark_tasks_s is None:
            return None
        return ended - timedelta(seconds=self.spark_tasks_s)

    def phases(self) -> dict[str, float | None]:
        """Seconds per phase of :data:`PHASES` (rounded to milliseconds); None when unknown."""
        started, ended = self.tasks_started_at, self.tasks_ended_at
        return {
            "reserve": _between(self.created_at, self.reserved_at),
            "wait_for_spark": _between(self.reserved_at, started),
            "spark_tasks": _between(started, ended),
            "wait_for_commit": _between(ended, self.commit_started_at),
            "commit": _between(self.commit_started_at, self.committed_at),
        }

    @property
    def duration_s(self) -> float | None:
        """Reservation to commit, in seconds (None until committed)."""
        return _between(self.created_at, self.committed_at)


def _between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)
