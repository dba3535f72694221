"""Labels a ledger transaction with its actor and reason (PostgreSQL settings).

The history triggers of migration 0004 read ``eo.actor_kind``, ``eo.actor`` and
``eo.reason`` (and, for seeks and resets, ``eo.cursor_move``). The reason and the
cursor-move kind belong to one change, so they are ``is_local``: they end with the
transaction. The actor may also be set for the session (``session=True``): the
connection then names it once, not in every transaction (store/connection.py).
"""

from __future__ import annotations

from typing import Any, Literal

from airflow_provider_eo.ledger.model.actors import Actor

CursorMoveKind = Literal["seek", "reset"]


def label_actor(cur: Any, actor: Actor, *, session: bool = False) -> None:
    """Name ``actor`` as the author of every change of the current transaction (with
    ``session``: of the connection's following transactions too, once this one commits;
    a rollback undoes it)."""
    local = not session
    cur.execute(
        "SELECT set_config('eo.actor_kind', %s, %s), set_config('eo.actor', %s, %s)",
        (actor.kind, local, actor.name, local),
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
