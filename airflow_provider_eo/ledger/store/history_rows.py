"""Reading the history the database records (migration 0004): read-only statements.

``eo.epoch_transitions`` (one row per state change of an epoch, and one for its creation)
and ``eo.cursor_moves`` (one row per cursor moved by a seek or a reset) are written by
triggers in the transaction of the change; nothing here writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_eo.ledger.model.history import CursorMove, HistoryEvent, Transition, newest_first

_TRANSITION_COLUMNS = "transition_id, epoch_id, pipeline, from_state, to_state, at, actor_kind, actor, reason"
_MOVE_COLUMNS = (
    'move_id, pipeline, topic, "partition", from_offset, to_offset, kind, at, actor_kind, actor, reason'
)


def epoch_history(cur: Any, epoch_id: int) -> list[Transition]:
    """The transitions of ``epoch_id``, oldest first ([] for an unknown epoch)."""
    cur.execute(
        f"SELECT {_TRANSITION_COLUMNS} FROM eo.epoch_transitions WHERE epoch_id = %s ORDER BY transition_id",
        (epoch_id,),
    )
    return [Transition(*row) for row in cur.fetchall()]


def epochs_history(cur: Any, epoch_ids: Sequence[int]) -> dict[int, list[Transition]]:
    """The transitions of each of ``epoch_ids`` (oldest first), in one statement; an id
    without rows maps to []."""
    found: dict[int, list[Transition]] = {int(epoch_id): [] for epoch_id in epoch_ids}
    if not found:
        return found
    cur.execute(
        f"SELECT {_TRANSITION_COLUMNS} FROM eo.epoch_transitions WHERE epoch_id = ANY(%s) "
        "ORDER BY epoch_id, transition_id",
        (list(found),),
    )
    for row in cur.fetchall():
        transition = Transition(*row)
        found[transition.epoch_id].append(transition)
    return found


def pipeline_history(cur: Any, pipeline: str, limit: int) -> list[HistoryEvent]:
    """The ``limit`` newest transitions and cursor moves of ``pipeline``, merged by time,
    newest first (two statements of at most ``limit`` rows each, newest rows by id:
    ``cursor_moves_pipeline`` backs the second)."""
    cur.execute(
        f"SELECT {_TRANSITION_COLUMNS} FROM eo.epoch_transitions WHERE pipeline = %s "
        "ORDER BY transition_id DESC LIMIT %s",
        (pipeline, limit),
    )
    transitions = [Transition(*row) for row in cur.fetchall()]
    cur.execute(
        f"SELECT {_MOVE_COLUMNS} FROM eo.cursor_moves WHERE pipeline = %s ORDER BY move_id DESC LIMIT %s",
        (pipeline, limit),
    )
    moves = [CursorMove(*row) for row in cur.fetchall()]
    return newest_first([*transitions, *moves], limit)
