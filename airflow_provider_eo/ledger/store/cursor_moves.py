"""Statements of a seek or reset (``ledger/protocol/cursor_seek.py`` runs them in one transaction).

The transaction first declares itself a seek or reset (``store/transaction_labels.py``
``declare_cursor_move``): only then does the 0004 trigger let a cursor move back, and it
writes one ``eo.cursor_moves`` row per changed cursor (kind, from, to, actor, reason).
Every statement here is one statement whatever the number of partitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg2.extras import execute_values

from airflow_provider_eo.ledger.model.epoch import PartitionRange

#: ``(topic, partition, from_offset, to_offset)``: one cursor's move.
Move = tuple[str, int, int, int]


def lock_existing_pipeline(cur: Any, pipeline: str) -> bool:
    """Lock the pipeline's row until the transaction ends (as ``epoch_rows.lock_pipeline``
    does, serializing with reservations and commits) without creating it; False when the
    ledger has no such pipeline."""
    cur.execute("SELECT name FROM eo.pipelines WHERE name = %s FOR UPDATE", (pipeline,))
    return cur.fetchone() is not None


def move_cursors(cur: Any, pipeline: str, moves: Sequence[Move]) -> int:
    """Set each cursor from its ``from_offset`` to its ``to_offset`` (and lower the
    partition's ``initial_offset`` to a cursor below it: CHECK cursor >= initial); returns
    how many rows changed. A row whose cursor is no longer ``from_offset`` is left alone
    (the caller compares the count). Needs ``declare_cursor_move`` for backward moves."""
    if not moves:
        return 0
    execute_values(
        cur,
        """
        UPDATE eo.partitions p
           SET cursor_offset = m.to_offset,
               initial_offset = LEAST(p.initial_offset, m.to_offset)
          FROM (VALUES %s) AS m (pipeline, topic, "partition", from_offset, to_offset)
         WHERE p.pipeline = m.pipeline AND p.topic = m.topic AND p."partition" = m."partition"
           AND p.cursor_offset = m.from_offset
        """,
        [(pipeline, t, p, f, o) for t, p, f, o in moves],
        template="(%s, %s, %s::integer, %s::bigint, %s::bigint)",
        page_size=len(moves),
    )
    return int(cur.rowcount)


def record_skipped(cur: Any, pipeline: str, gaps: Sequence[PartitionRange], reason: str) -> None:
    """Record ranges skipped by a forward move in ``eo.gaps`` (``epoch_id`` NULL).

    A gap already starting at the same offset (the key is pipeline, topic, partition,
    start), left by an earlier seek from the same cursor that a backward seek undid, is
    extended: it keeps the greater end and takes this reason and time. Gaps are the
    record of every range ever skipped, not of what is unread now.
    """
    if not gaps:
        return
    execute_values(
        cur,
        """
        INSERT INTO eo.gaps AS g (pipeline, topic, "partition", start_offset, end_offset, epoch_id, reason)
        VALUES %s
        ON CONFLICT (pipeline, topic, "partition", start_offset) DO UPDATE
           SET end_offset = GREATEST(g.end_offset, EXCLUDED.end_offset),
               reason = EXCLUDED.reason, recorded_at = now()
        """,
        [(pipeline, g.topic, g.partition, g.start, g.end, None, reason) for g in gaps],
        page_size=len(gaps),
    )
