"""Statements of a replay of dead letters: the candidates a filter matches, a replay
epoch's selection (``eo.replay_selections``) and the resolution of its dead letters when
it commits. Each runs in the caller's transaction; what to select is decided by
``ledger/planning/replay_plan.py``."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.ledger.store.epoch_rows import copy_text

_CANDIDATES = """
SELECT d.topic, d."partition", d."offset", d.epoch_id, d.resolved_by_epoch
  FROM eo.dead_letters d
  JOIN eo.epochs e ON e.epoch_id = d.epoch_id
 WHERE d.pipeline = %(pipeline)s
   AND (e.state = %(committed)s
        OR (e.state = %(aborted)s AND EXISTS (
              SELECT 1 FROM eo.replay_selections s
               WHERE s.epoch_id = d.epoch_id
                 AND (s.topic, s."partition", s."offset") = (d.topic, d."partition", d."offset"))))
   AND (%(epoch)s::bigint IS NULL OR d.epoch_id = %(epoch)s)
   AND (%(topic)s::text IS NULL OR d.topic = %(topic)s)
   AND (%(partition)s::integer IS NULL OR d."partition" = %(partition)s)
   AND (%(from_offset)s::bigint IS NULL OR d."offset" >= %(from_offset)s)
   AND (%(to_offset)s::bigint IS NULL OR d."offset" < %(to_offset)s)
   AND (%(reason)s::text IS NULL OR strpos(lower(d.error), lower(%(reason)s)) > 0)
 ORDER BY d.topic, d."partition", d."offset"
"""


def select_dead_letters(
    cur: Any,
    pipeline: str,
    *,
    epoch: int | None = None,
    topic: str | None = None,
    partition: int | None = None,
    from_offset: int | None = None,
    to_offset: int | None = None,
    reason: str | None = None,
) -> list[tuple[str, int, int, int, int | None]]:
    """``(topic, partition, offset, epoch_id, resolved_by_epoch)`` of ``pipeline``'s dead
    letters of COMMITTED epochs matching every filter given (``from_offset`` inclusive,
    ``to_offset`` exclusive, ``reason`` a case-insensitive substring of the error),
    resolved or not, ordered by topic, partition, offset. A dead letter that an ABORTED
    replay epoch selected and recorded again (its row now names that epoch) still counts:
    it was a committed epoch's dead letter before that replay."""
    cur.execute(
        _CANDIDATES,
        {
            "pipeline": pipeline,
            "committed": EpochState.COMMITTED.value,
            "aborted": EpochState.ABORTED.value,
            "epoch": epoch,
            "topic": topic,
            "partition": partition,
            "from_offset": from_offset,
            "to_offset": to_offset,
            "reason": reason,
        },
    )
    return [tuple(row) for row in cur.fetchall()]


def insert_selection(cur: Any, epoch_id: int, selection: Mapping[TopicPartition, tuple[int, ...]]) -> int:
    """Store the offsets replay epoch ``epoch_id`` writes (one COPY); returns their count."""
    lines = "".join(
        f"{epoch_id}\t{copy_text(topic)}\t{partition}\t{offset}\n"
        for (topic, partition), offsets in sorted(selection.items())
        for offset in offsets
    )
    cur.copy_expert(
        'COPY eo.replay_selections (epoch_id, topic, "partition", "offset") FROM STDIN', io.StringIO(lines)
    )
    return sum(len(offsets) for offsets in selection.values())


def fetch_selection(cur: Any, epoch_id: int) -> dict[TopicPartition, tuple[int, ...]] | None:
    """The offsets replay epoch ``epoch_id`` writes, per partition, ascending (None: the
    epoch has no selection, it writes its whole ranges)."""
    cur.execute(
        'SELECT topic, "partition", "offset" FROM eo.replay_selections WHERE epoch_id = %s'
        ' ORDER BY topic, "partition", "offset"',
        (epoch_id,),
    )
    selection: dict[TopicPartition, list[int]] = {}
    for topic, partition, offset in cur.fetchall():
        selection.setdefault((topic, partition), []).append(offset)
    return {tp: tuple(offsets) for tp, offsets in selection.items()} or None


_RESOLVE = """
UPDATE eo.dead_letters d
   SET resolved_by_epoch = s.epoch_id, resolved_at = now()
  FROM eo.replay_selections s
  JOIN eo.epochs e ON e.epoch_id = s.epoch_id
 WHERE s.epoch_id = %(epoch)s
   AND d.pipeline = e.pipeline
   AND (d.topic, d."partition", d."offset") = (s.topic, s."partition", s."offset")
   AND d.resolved_by_epoch IS NULL
   AND d.epoch_id IS DISTINCT FROM s.epoch_id
"""


def resolve_replayed(cur: Any, epoch_id: int) -> int:
    """Mark the dead letters replay epoch ``epoch_id`` wrote as resolved by it (call in the
    transaction that commits it): every selected, unresolved dead letter whose row the
    epoch did not dead-letter again (its ``epoch_id`` is still another epoch's). Returns
    how many; an epoch without a selection resolves none."""
    cur.execute(_RESOLVE, {"epoch": epoch_id})
    return int(cur.rowcount)
