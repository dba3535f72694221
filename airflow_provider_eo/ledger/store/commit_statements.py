"""The commit's statements: WRITTEN -> COMMITTED, and what moves with it in the same
transaction.

A commit is one transaction of four statements, each named for what it does:

* the guarded UPDATE of the epoch's state (only from a source state of
  ``states.TRANSITIONS``);
* :func:`~.cursors.advance_to_committed_ends`: a stream epoch raises its partitions'
  stored cursors to its range ends;
* :func:`~.replay_rows.resolve_replayed`: a replay epoch marks the dead letters it wrote
  resolved by it;
* :func:`number_dead_letters_for_publication`: the epoch's dead letters get their place
  in the pipeline's publish order (``publish_seq``), which the dead-letter topic follows.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.states import EpochState, sources_of
from airflow_provider_eo.ledger.store.cursors import advance_to_committed_ends
from airflow_provider_eo.ledger.store.dead_letter_rows import number_dead_letters_for_publication
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epoch
from airflow_provider_eo.ledger.store.epoch_transitions import refuse
from airflow_provider_eo.ledger.store.replay_rows import resolve_replayed
from airflow_provider_eo.ledger.store.transaction_labels import label_reason


def mark_committed(
    cur: Any, epoch_id: int, reason: str | None = None, step_seconds: float | None = None
) -> tuple[Epoch, bool]:
    """WRITTEN -> COMMITTED; COMMITTED is a no-op. Returns (epoch, changed). ``reason``
    goes to the epoch's history (None: the trigger's "committed"). ``commit_started_at`` is
    ``committed_at`` minus ``step_seconds`` (the commit step's duration so far, on the
    caller's monotonic clock: no clock skew), or NULL without it.

    A stream epoch's change raises its partitions' stored cursors to its range ends in
    the same transaction (:func:`~.cursors.advance_to_committed_ends`), the epoch's dead
    letters get their publish order (:func:`number_dead_letters_for_publication`),
    and a replay epoch marks the dead letters it wrote resolved by it
    (:func:`~.replay_rows.resolve_replayed`).
    Raises ``IllegalTransition`` (nothing changed) from any other state.
    """
    label_reason(cur, reason)
    cur.execute(
        "UPDATE eo.epochs SET state = %s, committed_at = now(),"
        " commit_started_at = now() - make_interval(secs => %s::double precision)"
        " WHERE epoch_id = %s AND state = ANY(%s)",
        (EpochState.COMMITTED.value, step_seconds, epoch_id, sources_of(EpochState.COMMITTED)),
    )
    changed = cur.rowcount == 1
    if changed:
        advance_to_committed_ends(cur, epoch_id)
        resolve_replayed(cur, epoch_id)
    epoch = fetch_epoch(cur, epoch_id)
    if changed:
        number_dead_letters_for_publication(cur, epoch.pipeline, epoch_id)
    if changed or epoch.state is EpochState.COMMITTED:
        return epoch, changed
    refuse(epoch, EpochState.COMMITTED)
