"""The vote and the abort: state changes of one epoch, each a single conditional UPDATE
(the commit, with what moves with it, is ``commit_statements.py``).

Each function runs in the caller's transaction. The UPDATE only matches a row in a
source state of ``states.TRANSITIONS`` (bound from :func:`sources_of`), so concurrent
actors (a late vote, recovery, an operator) cannot both succeed; when nothing matched,
the current row and :func:`check_transition` decide the error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.refusals import FencedOut, IllegalTransition
from airflow_provider_eo.ledger.model.states import EpochState, check_transition, sources_of
from airflow_provider_eo.ledger.planning.fencing import AlreadyDone, Fenced, write_permission
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epoch
from airflow_provider_eo.ledger.store.transaction_labels import label_reason

#: The hint of a refusal whose UPDATE matched nothing although the row, read right after,
#: is in a source state: another session moved it in between.
CHANGED_CONCURRENTLY = "another session changed the epoch meanwhile; nothing was changed, retry"


def refuse(epoch: Epoch, target: EpochState, *, operator_action: bool = False) -> NoReturn:
    """Raise ``IllegalTransition`` for a guarded UPDATE to ``target`` that matched nothing:
    the state machine's refusal, or :data:`CHANGED_CONCURRENTLY`."""
    check_transition(epoch.epoch_id, epoch.state, target, operator_action=operator_action)
    raise IllegalTransition(epoch.epoch_id, epoch.state.value, target.value, CHANGED_CONCURRENTLY)


def vote_written(
    cur: Any,
    epoch_id: int,
    fencing_token: str,
    metrics: Mapping[str, Any] | None,
    spec_digest: str | None = None,
) -> Epoch:
    """RESERVED -> WRITTEN if the token matches (and ``spec_digest``, when given, is the
    epoch's mapping or the epoch recorded none); a repeated vote with the same token is a no-op.

    Raises ``FencedOut`` (nothing changed) when the fencing rule
    (``ledger/planning/fencing.py``, ``write_permission``) fences the writer out: its token
    differs from the epoch's, the epoch is no longer RESERVED, or it runs another mapping.
    """
    cur.execute(
        "UPDATE eo.epochs SET state = %s, written_at = now(), metrics = %s"
        " WHERE epoch_id = %s AND state = ANY(%s) AND fencing_token::text = %s"
        " AND (spec_digest IS NULL OR %s::text IS NULL OR spec_digest = %s)",
        (
            EpochState.WRITTEN.value,
            json.dumps(dict(metrics or {})),
            epoch_id,
            sources_of(EpochState.WRITTEN),
            str(fencing_token),
            spec_digest,
            spec_digest,
        ),
    )
    changed = cur.rowcount == 1
    epoch = fetch_epoch(cur, epoch_id)
    permission = write_permission(epoch, fencing_token, spec_digest)
    if changed or isinstance(permission, AlreadyDone):
        return epoch
    reason = permission.reason if isinstance(permission, Fenced) else CHANGED_CONCURRENTLY
    raise FencedOut(epoch_id, epoch.state.value, reason)


def abort(cur: Any, epoch_id: int, reason: str, *, allow_written: bool) -> tuple[Epoch, bool]:
    """RESERVED -> ABORTED (WRITTEN too with ``allow_written``, the operator action);
    ABORTED is a no-op. Returns (epoch, changed).

    Raises ``IllegalTransition`` (nothing changed) from any other state. With
    ``allow_written`` the transaction marks itself an operator action
    (``eo.operator_action``), without which the schema's trigger refuses WRITTEN -> ABORTED.
    """
    label_reason(cur, reason)
    if allow_written:
        cur.execute("SELECT set_config('eo.operator_action', 'on', true)")
    cur.execute(
        "UPDATE eo.epochs SET state = %s, aborted_at = now(), error = %s"
        " WHERE epoch_id = %s AND state = ANY(%s)",
        (
            EpochState.ABORTED.value,
            reason,
            epoch_id,
            sources_of(EpochState.ABORTED, operator_action=allow_written),
        ),
    )
    changed = cur.rowcount == 1
    epoch = fetch_epoch(cur, epoch_id)
    if changed or epoch.state is EpochState.ABORTED:
        return epoch, changed
    refuse(epoch, EpochState.ABORTED, operator_action=allow_written)
