"""Every epoch's history, as values: its state changes and a pipeline's cursor moves.

The database writes the history itself (migration 0004: ``eo.epoch_transitions`` by a
trigger on ``eo.epochs``, ``eo.cursor_moves`` by a trigger on ``eo.partitions``), in the
transaction of the change; these are the rows read back (``store/history_rows.py``), with the
JSON forms ``eo-ledger epoch`` / ``eo-ledger history`` and the UI print.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Transition:
    """One state change of an epoch: ``from_state`` (None: its creation) -> ``to_state``,
    ``at`` (the database's clock), who (``actor_kind``, ``actor``) and why (``reason``)."""

    transition_id: int
    epoch_id: int
    pipeline: str
    from_state: str | None
    to_state: str
    at: datetime
    actor_kind: str
    actor: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        """``{from, to, at, actor_kind, actor, reason}`` (``at``: ISO 8601): the item of
        ``eo-ledger epoch ID``'s ``history``."""
        return {
            "from": self.from_state,
            "to": self.to_state,
            "at": self.at.isoformat(),
            "actor_kind": self.actor_kind,
            "actor": self.actor,
            "reason": self.reason,
        }

    def to_event(self) -> dict[str, Any]:
        """An item of a pipeline's history: ``{"event": "transition", "epoch_id", **to_json()}``."""
        return {"event": "transition", "epoch_id": self.epoch_id, **self.to_json()}


@dataclass(frozen=True)
class CursorMove:
    """One cursor moved by a seek or a reset (``eo.cursor_moves``): a partition's cursor
    from ``from_offset`` to ``to_offset``, by whom and why."""

    move_id: int
    pipeline: str
    topic: str
    partition: int
    from_offset: int
    to_offset: int
    kind: str
    at: datetime
    actor_kind: str
    actor: str
    reason: str

    def to_event(self) -> dict[str, Any]:
        """An item of a pipeline's history: ``{"event": "cursor_move", topic, partition,
        from, to, kind, at, actor_kind, actor, reason}``."""
        return {
            "event": "cursor_move",
            "topic": self.topic,
            "partition": self.partition,
            "from": self.from_offset,
            "to": self.to_offset,
            "kind": self.kind,
            "at": self.at.isoformat(),
            "actor_kind": self.actor_kind,
            "actor": self.actor,
            "reason": self.reason,
        }


HistoryEvent = Transition | CursorMove


def newest_first(events: Iterable[HistoryEvent], limit: int) -> list[HistoryEvent]:
    """The ``limit`` newest of ``events`` by time, newest first (a transition before a
    cursor move of the same instant; then by id, newest first)."""
    return sorted(
        events,
        key=lambda e: (
            e.at,
            isinstance(e, Transition),
            e.transition_id if isinstance(e, Transition) else e.move_id,
        ),
        reverse=True,
    )[:limit]


def epoch_detail(
    summary: dict[str, Any], spec_digest: str | None, transitions: Iterable[Transition]
) -> dict[str, Any]:
    """``eo-ledger epoch ID`` and the epochs API's answer: the epoch's summary (``Epoch.to_summary``),
    the digest of the mapping it was reserved with, and its ``history``, oldest first."""
    return {**summary, "spec_digest": spec_digest, "history": [t.to_json() for t in transitions]}
