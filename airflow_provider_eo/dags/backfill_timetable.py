"""``BackfillOnlyTimetable``: cron data intervals for Airflow's Backfill dialog, never a scheduled run.

The backfill DAG needs a periodic timetable: Airflow offers its Backfill dialog (and
``POST /api/v2/backfills``) only for one, and a backfill run's data interval is what the
run rewrites. But the scheduler must never create runs of it by itself: a scheduled
backfill run would rewrite the last interval every day. Airflow's own options cannot
say this (``allowed_run_types`` must include SCHEDULED whenever the timetable can be
scheduled), so this timetable:

* has the intervals of :class:`CronDataIntervalTimetable` (``@daily``: midnight to
  midnight), which Airflow's backfill planner reads (it asks with ``catchup=True``);
* answers "no next run" to the scheduler's own question (a DAG with ``catchup=False``
  asks with ``catchup=False``), so ``next_dagrun`` stays empty;
* declares ``can_be_scheduled = False`` (like ``schedule=None``), so the DAG's
  ``allowed_run_types`` may leave SCHEDULED out, and the scheduler refuses one anyway.

It is registered through the provider's plugin (``plugins/epochs.py``: Airflow
serializes custom timetables only when a plugin lists them). Its summary in the UI
reads ``backfill only: <cron>``.
"""

from __future__ import annotations

from airflow.timetables.base import DagRunInfo, DataInterval, TimeRestriction
from airflow.timetables.interval import CronDataIntervalTimetable


class BackfillOnlyTimetable(CronDataIntervalTimetable):
    """Cron data intervals for backfills and manual runs; no automatic runs.

    A DAG using it must set ``catchup=False`` (the factory does).
    """

    can_be_scheduled = False

    def next_dagrun_info(
        self, *, last_automated_data_interval: DataInterval | None, restriction: TimeRestriction
    ) -> DagRunInfo | None:
        """None for the scheduler (``catchup=False``); the intervals for a backfill (``catchup=True``)."""
        if not restriction.catchup:
            return None
        return super().next_dagrun_info(
            last_automated_data_interval=last_automated_data_interval, restriction=restriction
        )

    @property
    def summary(self) -> str:
        return f"backfill only: {self._expression}"
