"""Labels a ledger transaction with its actor and reason (transaction-local settings).

The history triggers of migration 0004 read ``eo.actor_kind``, ``eo.actor`` and
``eo.reason`` (and, for seeks and resets, ``eo.cursor_move``); set outside a transaction
they would leak, so every setting here is ``is_local``: it ends with the transaction.
"""

from __future__ import annotations

from typing import Any, Literal

from airflow_provider_eo.ledger.actors import Actor

CursorMoveKind = Literal["seek", "reset"]


def label_actor(cur: Any, actor: Actor) -> None:
    """Name ``actor`` as the author of every change of the current transaction."""
    cur.execute(
        "SELECT set_config('eo.actor_kind', %s, true), set_config('eo.actor', %s, true)",
        (actor.kind, actor.name),
    )


def label_reason(cur: Any, reason: str | None) -> None:
    """The reason recorded for the following changes of this transaction (None: the
    trigger's default for the target state)."""
    cur.execute("SELECT set_config('eo.reason', %s, true)", (reason or "",))


def declare_cursor_move(cur: Any, kind: CursorMoveKind, reason: str) -> None:
    """Mark this transaction a seek or reset: cursors may move back, and every cursor
    change is recorded in ``eo.cursor_moves`` with ``reason``."""
    cur.execute(
        "SELECT set_config('eo.cursor_move', %s, true), set_config('eo.reason', %s, true)", (kind, reason)
    )
