"""Per-epoch figures for the charts and the epoch page: records, dead letters and the times
its phases are cut from (``ledger/model/phases.py``), read without the bulky parts of a row.

:func:`window_epoch_ids` picks a window's committed epochs (one statement, the newest
``limit`` of them), :func:`epoch_points` reads their figures (one statement whatever their
number; of the vote's metrics only the four numbers needed, never its per-partition list).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from airflow_provider_eo.ledger.model.chart_figures import EpochPoint
from airflow_provider_eo.ledger.model.phases import EpochTimes
from airflow_provider_eo.ledger.model.states import EpochState


def window_epoch_ids(
    cur: Any, pipeline: str, *, since: datetime | None, last: int | None, limit: int
) -> tuple[list[int], int]:
    """The COMMITTED epochs of ``pipeline`` committed at or after ``since`` (None: any
    time), of those the newest ``last`` (None: all): returns the newest ``limit`` of them
    (ids ascending) and how many the window holds."""
    cur.execute(
        """
        WITH in_window AS (
            SELECT epoch_id FROM eo.epochs
             WHERE pipeline = %(pipeline)s AND state = %(committed)s
               AND (%(since)s::timestamptz IS NULL OR committed_at >= %(since)s::timestamptz)
             ORDER BY epoch_id DESC LIMIT %(last)s)
        SELECT epoch_id, (SELECT count(*) FROM in_window)
          FROM in_window ORDER BY epoch_id DESC LIMIT %(limit)s
        """,
        {
            "pipeline": pipeline,
            "committed": EpochState.COMMITTED.value,
            "since": since,
            "last": last,
            "limit": limit,
        },
    )
    rows = cur.fetchall()
    return sorted(int(epoch_id) for epoch_id, _ in rows), (int(rows[0][1]) if rows else 0)


def epoch_points(cur: Any, epoch_ids: Sequence[int]) -> list[EpochPoint]:
    """The figures of ``epoch_ids`` (those that exist), by id."""
    if not epoch_ids:
        return []
    cur.execute(
        """
        SELECT e.epoch_id, e.kind, e.state, e.created_at, e.written_at, e.committed_at,
               e.commit_started_at, e.metrics->'records', e.metrics->'spark_tasks_s',
               e.metrics->'vote_after_tasks_s', e.metrics->'bad_records',
               (SELECT t.at FROM eo.epoch_transitions t
                 WHERE t.epoch_id = e.epoch_id AND t.from_state IS NULL AND t.actor_kind <> 'migration'
                 ORDER BY t.transition_id LIMIT 1)
          FROM eo.epochs e
         WHERE e.epoch_id = ANY(%s)
         ORDER BY e.epoch_id
        """,
        (list(epoch_ids),),
    )
    points = []
    for (epoch_id, kind, state, created, written, committed, commit_started, records, spark_tasks_s,
         vote_after_tasks_s, bad_records, reserved) in cur.fetchall():  # fmt: skip
        metrics = {"spark_tasks_s": spark_tasks_s, "vote_after_tasks_s": vote_after_tasks_s}
        times = EpochTimes.of(created, reserved, written, committed, commit_started, metrics)
        read, rejected = (None if n is None else int(n) for n in (records, bad_records))
        points.append(EpochPoint(int(epoch_id), kind, state, read, rejected, times))
    return points
