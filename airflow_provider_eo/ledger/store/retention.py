"""Retention of settled epochs: what ``eo-ledger prune`` deletes, and the deleting.

Prune deletes COMMITTED and ABORTED epochs (with their ranges) of the pipelines it is
given, among those matching a :class:`PrunePolicy`. What it never touches:

* RESERVED and WRITTEN epochs (open work: a run, recovery or a commit still needs them);
* cursors and pins: cursors are stored in ``eo.partitions`` (store/cursors.py) and no
  longer derived from epochs, so the next reservation starts at exactly the same offsets;
* gaps and dead letters, and the epochs they name: an epoch named by a row of ``eo.gaps``
  or ``eo.dead_letters`` (as its epoch, or as the replay that resolved it) is kept
  (reported as ``kept_referenced``), so those rows keep their foreign key and still say
  which epoch lost, rejected or resolved what.

A deleted epoch's history (``eo.epoch_transitions``), replay selection and commit lag
sample go with it, in the same transaction, and so do the kept audits none of whose
epochs is left, with their findings (store/audit_retention.py); wait lag samples go by
the same criteria (store/sample_retention.py). The report counts the history rows
(``transitions``), the samples (``lag_samples``), the audits and their findings
(``audits``, ``audit_findings``), a dry run too. Cursor moves (``eo.cursor_moves``) name no epoch
and are never pruned.

After a prune the committed stream ranges of a partition tile ``[first kept start,
cursor)`` instead of ``[initial_offset, cursor)``; backfill runs older than the pruned
epochs no longer find them (a resumed old run would write its range again, which the
write step makes idempotent).

Deleting runs in batches of at most ``batch_size`` epochs, each its own short
transaction (three statements: lock the batch's epoch rows, delete their ranges, delete
them), so locks and WAL stay bounded whatever the history; a failure leaves the earlier
batches done and a rerun finishes the rest. Every statement is index-backed
(``epochs_settled``, ``gaps_epoch``, ``dead_letters_epoch`` of migration 0002).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from airflow_provider_eo.ledger.model.retention_policy import PruneCount, PrunePolicy
from airflow_provider_eo.ledger.model.states import SETTLED_STATES, sql_literals
from airflow_provider_eo.ledger.store import audit_retention, sample_retention

log = logging.getLogger(__name__)

Transaction = Callable[[], AbstractContextManager[Any]]
"""Opens one transaction and yields its cursor (``LedgerConnection.transaction``)."""


# The settled epochs of %(pipeline)s that the policy selects. The state list is literal so
# the partial index epochs_settled (same predicate) answers it.
_SETTLED = sql_literals(SETTLED_STATES)
_MATCHING = f"""
    SELECT e.epoch_id,
           EXISTS (SELECT 1 FROM eo.gaps g WHERE g.epoch_id = e.epoch_id)
        OR EXISTS (SELECT 1 FROM eo.dead_letters d WHERE d.epoch_id = e.epoch_id)
        OR EXISTS (SELECT 1 FROM eo.dead_letters d WHERE d.resolved_by_epoch = e.epoch_id) AS referenced
      FROM eo.epochs e
     WHERE e.pipeline = %(pipeline)s AND e.state IN ({_SETTLED})
       AND (%(days)s::integer IS NULL
            OR coalesce(e.committed_at, e.aborted_at) < now() - make_interval(days => %(days)s::integer))
       AND (%(keep)s::integer IS NULL
            OR e.epoch_id < (SELECT k.epoch_id FROM eo.epochs k
                              WHERE k.pipeline = %(pipeline)s AND k.state IN ({_SETTLED})
                              ORDER BY k.epoch_id DESC OFFSET %(keep)s::integer - 1 LIMIT 1))
"""


def _params(pipeline: str, policy: PrunePolicy) -> dict[str, Any]:
    return {"pipeline": pipeline, "days": policy.older_than_days, "keep": policy.keep_last}


def count_prunable(cur: Any, pipeline: str, policy: PrunePolicy) -> PruneCount:
    """What :func:`prune_pipeline` would delete now (one statement; nothing changes)."""
    cur.execute(
        f"""
        WITH matching AS ({_MATCHING}),
             doomed AS (SELECT epoch_id FROM matching WHERE NOT referenced)
        SELECT (SELECT count(*) FROM doomed),
               (SELECT count(*) FROM eo.epoch_ranges WHERE epoch_id IN (SELECT epoch_id FROM doomed)),
               (SELECT min(epoch_id) FROM doomed),
               (SELECT max(epoch_id) FROM doomed),
               (SELECT count(*) FROM matching WHERE referenced),
               (SELECT count(*) FROM eo.epoch_transitions WHERE epoch_id IN (SELECT epoch_id FROM doomed))
        """,
        _params(pipeline, policy),
    )
    epochs, ranges, oldest, newest, kept, history = cur.fetchone()
    doomed = f"SELECT epoch_id FROM ({_MATCHING}) matching WHERE NOT referenced"
    samples = sample_retention.count_samples(cur, _params(pipeline, policy), doomed)
    audits, findings = audit_retention.count_audits(cur, _params(pipeline, policy), doomed)
    return PruneCount(
        pipeline, int(epochs), int(ranges), oldest, newest, int(kept),
        transitions=int(history), lag_samples=samples, audits=audits, audit_findings=findings,
    )  # fmt: skip


def delete_batch(
    cur: Any, pipeline: str, policy: PrunePolicy, batch_size: int
) -> tuple[list[int], PruneCount]:
    """Delete the oldest ``batch_size`` prunable epochs of ``pipeline``, their ranges,
    history and commit lag samples, then the audits left without an epoch, in the
    caller's transaction; returns the deleted epoch ids and what went (a ``PruneCount``
    of this batch)."""
    cur.execute(
        f"""
        SELECT epoch_id FROM eo.epochs
         WHERE epoch_id IN (SELECT epoch_id FROM ({_MATCHING}) matching WHERE NOT referenced
                             ORDER BY epoch_id LIMIT %(batch)s)
         ORDER BY epoch_id
           FOR UPDATE
        """,
        {**_params(pipeline, policy), "batch": batch_size},
    )
    ids = [int(epoch_id) for (epoch_id,) in cur.fetchall()]
    if not ids:
        return [], PruneCount(pipeline, 0, 0, None, None, 0)
    cur.execute("DELETE FROM eo.epoch_ranges WHERE epoch_id = ANY(%s)", (ids,))
    ranges = int(cur.rowcount)
    # An epoch's history and replay selection go with it (migration 0004).
    cur.execute("DELETE FROM eo.epoch_transitions WHERE epoch_id = ANY(%s)", (ids,))
    history = int(cur.rowcount)
    cur.execute("DELETE FROM eo.replay_selections WHERE epoch_id = ANY(%s)", (ids,))
    samples = sample_retention.delete_epoch_samples(cur, ids)
    cur.execute(
        "DELETE FROM eo.epochs WHERE epoch_id = ANY(%s) AND state = ANY(%s)",
        (ids, [state.value for state in SETTLED_STATES]),
    )
    audits, findings = audit_retention.delete_orphaned_audits(cur, pipeline, ids)
    return ids, PruneCount(
        pipeline, len(ids), ranges, ids[0], ids[-1], 0, 1,
        transitions=history, lag_samples=samples, audits=audits, audit_findings=findings,
    )  # fmt: skip


def prune_pipeline(
    transaction: Transaction, pipeline: str, policy: PrunePolicy, *, batch_size: int = 1000
) -> PruneCount:
    """Delete every prunable epoch of ``pipeline``, ``batch_size`` per transaction,
    oldest first, then its prunable wait samples, ``batch_size`` per transaction; returns
    what was deleted. Raises ``ValueError`` for ``batch_size < 1``."""
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, not {batch_size}")
    with transaction() as cur:
        kept = count_prunable(cur, pipeline, policy).kept_referenced
    epochs: list[int] = []
    ranges = batches = history = samples = audits = findings = 0
    for ids, batch in _batches(transaction, pipeline, policy, batch_size):
        epochs.extend(ids)
        ranges += batch.ranges
        history += batch.transitions
        samples += batch.lag_samples
        audits += batch.audits
        findings += batch.audit_findings
        batches += 1
        log.info(
            "pruned pipeline=%s epochs=%s epoch_ids=%s..%s ranges=%s transitions=%s lag_samples=%s"
            " audits=%s audit_findings=%s",
            pipeline, len(ids), ids[0], ids[-1], batch.ranges, batch.transitions, batch.lag_samples,
            batch.audits, batch.audit_findings,
        )  # fmt: skip
    while True:
        with transaction() as cur:
            deleted = sample_retention.delete_wait_samples(cur, _params(pipeline, policy), batch_size)
        if not deleted:
            break
        samples += deleted
        batches += 1
        log.info("pruned pipeline=%s wait lag_samples=%s", pipeline, deleted)
    return PruneCount(
        pipeline, len(epochs), ranges, min(epochs, default=None), max(epochs, default=None), kept, batches,
        transitions=history, lag_samples=samples, audits=audits, audit_findings=findings,
    )  # fmt: skip


def _batches(
    transaction: Transaction, pipeline: str, policy: PrunePolicy, batch_size: int
) -> Iterator[tuple[list[int], PruneCount]]:
    while True:
        with transaction() as cur:
            ids, batch = delete_batch(cur, pipeline, policy, batch_size)
        if not ids:
            return
        yield ids, batch


def known_pipelines(cur: Any, wanted: Sequence[str] | None) -> list[str]:
    """``wanted`` (every pipeline of the ledger when None), sorted; raises ``LookupError``
    naming any pipeline the ledger does not know."""
    cur.execute("SELECT name FROM eo.pipelines ORDER BY name")
    names = [name for (name,) in cur.fetchall()]
    if wanted is None:
        return names
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        raise LookupError(f"unknown pipeline(s): {', '.join(unknown)}")
    return sorted(set(wanted))
