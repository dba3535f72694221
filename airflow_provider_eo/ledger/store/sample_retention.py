"""Lag samples go with the epochs (``eo-ledger prune``, store/retention.py).

* A commit sample names its epoch: it is deleted with it, in the epoch's batch
  transaction (:func:`delete_epoch_samples`; its partition rows cascade).
* A wait sample names none: it is deleted when the prune's criteria hold for its time,
  read as an epoch's: ``--older-than-days N``, taken more than N days ago; ``--keep-last
  N``, taken before the pipeline's N-th newest settled epoch was created (beyond the N
  newest, so no sample outlives the epochs around it). Every given criterion must hold.
  They go after the epochs, in transactions of at most ``batch_size`` samples, oldest
  first (:func:`delete_wait_samples`).

Statements take the retention's parameters (``pipeline``, ``days``, ``keep``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_eo.ledger.model.states import SETTLED_STATES, sql_literals

_SETTLED = sql_literals(SETTLED_STATES)
WAIT_MATCHING = f"""
    SELECT sample_id FROM eo.lag_samples
     WHERE pipeline = %(pipeline)s AND source = 'wait'
       AND (%(days)s::integer IS NULL OR sampled_at < now() - make_interval(days => %(days)s::integer))
       AND (%(keep)s::integer IS NULL
            OR sampled_at < (SELECT k.created_at FROM eo.epochs k
                              WHERE k.pipeline = %(pipeline)s AND k.state IN ({_SETTLED})
                              ORDER BY k.epoch_id DESC OFFSET %(keep)s::integer - 1 LIMIT 1))
"""
"""The wait samples of ``pipeline`` the criteria select (see the module doc)."""


def count_samples(cur: Any, params: Mapping[str, Any], doomed_epochs: str) -> int:
    """Samples a prune would delete: the commit samples of the epochs the subquery
    ``doomed_epochs`` selects, and the wait samples :data:`WAIT_MATCHING` selects."""
    cur.execute(
        f"""
        SELECT (SELECT count(*) FROM eo.lag_samples WHERE epoch_id IN ({doomed_epochs}))
             + (SELECT count(*) FROM ({WAIT_MATCHING}) wait)
        """,
        params,
    )
    return int(cur.fetchone()[0])


def delete_epoch_samples(cur: Any, epoch_ids: Sequence[int]) -> int:
    """Delete the commit samples of ``epoch_ids`` (before the epochs: they reference them);
    returns how many."""
    cur.execute("DELETE FROM eo.lag_samples WHERE epoch_id = ANY(%s)", (list(epoch_ids),))
    return int(cur.rowcount)


def delete_wait_samples(cur: Any, params: Mapping[str, Any], batch_size: int) -> int:
    """Delete the oldest ``batch_size`` wait samples the criteria select; returns how many."""
    cur.execute(
        f"""
        DELETE FROM eo.lag_samples
         WHERE sample_id IN (SELECT sample_id FROM ({WAIT_MATCHING}) wait ORDER BY sample_id LIMIT %(batch)s)
        """,
        {**params, "batch": batch_size},
    )
    return int(cur.rowcount)
