"""State changes of one epoch, each a single conditional UPDATE.

Each function runs in the caller's transaction. The UPDATE only matches a row in an
allowed source state, so concurrent actors (a late vote, recovery, an operator)
cannot both succeed; when nothing matched the current row decides the error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_provider_eo.ledger.epoch_rows import fetch_epoch
from airflow_provider_eo.ledger.errors import FencedOut, IllegalTransition
from airflow_provider_eo.ledger.models import Epoch
from airflow_provider_eo.ledger.states import EpochState


def vote_written(cur: Any, epoch_id: int, fencing_token: str, metrics: Mapping[str, Any] | None) -> Epoch:
    """RESERVED -> WRITTEN if the token matches; a repeated vote with the same token is a no-op.

    Raises ``FencedOut`` (nothing changed) when the token differs or the epoch was aborted.
    """
    cur.execute(
        "UPDATE eo.epochs SET state = 'WRITTEN', written_at = now(), metrics = %s"
        " WHERE epoch_id = %s AND state = 'RESERVED' AND fencing_token::text = %s",
        (json.dumps(dict(metrics or {})), epoch_id, str(fencing_token)),
    )
    changed = cur.rowcount == 1
    epoch = fetch_epoch(cur, epoch_id)
    same_token = epoch.fencing_token == str(fencing_token)
    if changed or (same_token and epoch.state in (EpochState.WRITTEN, EpochState.COMMITTED)):
        return epoch
    if epoch.fencing_token != str(fencing_token):
        raise FencedOut(
            epoch_id, epoch.state.value, "the fencing token does not match (a newer writer owns it)"
        )
    raise FencedOut(epoch_id, epoch.state.value, "the epoch is no longer RESERVED")


def rotate_fencing_token(cur: Any, epoch_id: int, new_token: str) -> Epoch:
    """Give a RESERVED epoch a new token so any earlier writer's vote is fenced out."""
    cur.execute(
        "UPDATE eo.epochs SET fencing_token = %s WHERE epoch_id = %s AND state = 'RESERVED'",
        (new_token, epoch_id),
    )
    changed = cur.rowcount == 1
    epoch = fetch_epoch(cur, epoch_id)
    if not changed:
        raise IllegalTransition(
            epoch_id, epoch.state.value, "new fencing token", "only RESERVED epochs are fenced"
        )
    return epoch


def mark_committed(cur: Any, epoch_id: int) -> tuple[Epoch, bool]:
    """WRITTEN -> COMMITTED; COMMITTED is a no-op. Returns (epoch, changed)."""
    cur.execute(
        "UPDATE eo.epochs SET state = 'COMMITTED', committed_at = now()"
        " WHERE epoch_id = %s AND state = 'WRITTEN'",
        (epoch_id,),
    )
    changed = cur.rowcount == 1
    epoch = fetch_epoch(cur, epoch_id)
    if changed or epoch.state is EpochState.COMMITTED:
        return epoch, changed
    hint = "the epoch has not been written yet" if epoch.state is EpochState.RESERVED else ""
    raise IllegalTransition(epoch_id, epoch.state.value, EpochState.COMMITTED.value, hint)


def abort(cur: Any, epoch_id: int, reason: str, *, allow_written: bool) -> tuple[Epoch, bool]:
    """RESERVED -> ABORTED (WRITTEN too with ``allow_written``); ABORTED is a no-op."""
    sources = ["RESERVED", "WRITTEN"] if allow_written else ["RESERVED"]
    cur.execute(
        "UPDATE eo.epochs SET state = 'ABORTED', aborted_at = now(), error = %s"
        " WHERE epoch_id = %s AND state = ANY(%s)",
        (reason, epoch_id, sources),
    )
    changed = cur.rowcount == 1
    epoch = fetch_epoch(cur, epoch_id)
    if changed or epoch.state is EpochState.ABORTED:
        return epoch, changed
    hint = ""
    if epoch.state is EpochState.WRITTEN:
        hint = (
            "its data is in HBase: commit it, or abort explicitly with allow_written=True / --allow-written"
        )
    raise IllegalTransition(epoch_id, epoch.state.value, EpochState.ABORTED.value, hint)
