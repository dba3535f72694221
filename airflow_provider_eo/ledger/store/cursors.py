"""Stored stream cursors: ``eo.partitions.cursor_offset``, the next stream offset per pin.

A partition's cursor is the greatest of its initial offset, the ends of its COMMITTED
stream ranges and the ends of its recorded gaps. Since migration 0002 the store keeps
it in the partition's row instead of computing it from history: this module is the
only writer of the column, and it writes in the transaction that causes the move
(:func:`pin_partitions` when a partition is pinned, :func:`advance_to_committed_ends`
when a stream epoch becomes COMMITTED, :func:`record_gaps` when a gap is recorded).

Every write is one statement whatever the number of partitions, and only ever raises
a cursor (``WHERE cursor_offset < new``): PostgreSQL re-checks that condition on the
row's newest version after waiting for another writer's row lock, so concurrent
writers cannot move a cursor backwards. Reading a cursor touches only ``eo.partitions``
(its primary key), so it costs the same after a million epochs as after one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg2.extras import execute_values

from airflow_provider_eo.ledger.model.epoch import PartitionRange
from airflow_provider_eo.ledger.model.offsets import Pin, TopicPartition
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState


def stream_cursors(cur: Any, pipeline: str) -> dict[TopicPartition, int]:
    """Cursor per pinned partition of ``pipeline`` (empty when nothing is pinned)."""
    cur.execute(
        'SELECT topic, "partition", cursor_offset FROM eo.partitions WHERE pipeline = %s',
        (pipeline,),
    )
    return {(topic, partition): int(cursor) for topic, partition, cursor in cur.fetchall()}


def pin_partitions(cur: Any, pipeline: str, pins: Mapping[TopicPartition, Pin]) -> None:
    """Insert the pins (one statement); each cursor starts at its initial offset.

    Raises ``psycopg2.errors.UniqueViolation`` if a partition is already pinned (the
    caller holds the pipeline's lock and pins only partitions it found unpinned).
    """
    if not pins:
        return
    rows = [(pipeline, tp[0], tp[1], pin.offset, pin.source, pin.offset) for tp, pin in sorted(pins.items())]
    execute_values(
        cur,
        'INSERT INTO eo.partitions (pipeline, topic, "partition", initial_offset, initial_source,'
        " cursor_offset) VALUES %s",
        rows,
        page_size=len(rows),
    )


def advance_to_committed_ends(cur: Any, epoch_id: int) -> int:
    """Raise each cursor of a stream epoch's partitions to its range's end (one UPDATE);
    returns how many cursors moved. Backfill epochs move nothing.

    Call in the transaction that marks ``epoch_id`` COMMITTED, after that UPDATE matched.
    """
    cur.execute(
        """
        UPDATE eo.partitions p
           SET cursor_offset = r.end_offset
          FROM eo.epochs e JOIN eo.epoch_ranges r USING (epoch_id)
         WHERE e.epoch_id = %s AND e.kind = %s AND e.state = %s
           AND p.pipeline = e.pipeline AND p.topic = r.topic AND p."partition" = r."partition"
           AND p.cursor_offset < r.end_offset
        """,
        (epoch_id, EpochKind.STREAM.value, EpochState.COMMITTED.value),
    )
    return int(cur.rowcount)


def record_gaps(
    cur: Any, pipeline: str, gaps: Sequence[PartitionRange], epoch_id: int | None, reason: str
) -> None:
    """Insert the gaps into ``eo.gaps`` and raise each partition's cursor to its gap's end,
    in one statement whatever their number (nothing for no gaps)."""
    if not gaps:
        return
    rows = [(pipeline, g.topic, g.partition, g.start, g.end, epoch_id, reason) for g in gaps]
    execute_values(
        cur,
        """
        WITH recorded AS (
            INSERT INTO eo.gaps (pipeline, topic, "partition", start_offset, end_offset, epoch_id, reason)
            VALUES %s
            RETURNING pipeline, topic, "partition", end_offset
        )
        UPDATE eo.partitions p
           SET cursor_offset = recorded.end_offset
          FROM recorded
         WHERE p.pipeline = recorded.pipeline AND p.topic = recorded.topic
           AND p."partition" = recorded."partition" AND p.cursor_offset < recorded.end_offset
        """,
        rows,
        page_size=len(rows),
    )
