"""Kept audits go with their epochs (``eo-ledger prune``, store/retention.py).

An audit (``eo.audits``) names its window's epochs in ``epoch_ids`` (no foreign key: an
audit outlives any one of them). It is deleted once **every** epoch it names is gone: in
the batch transaction that deletes the last of them, after the epochs
(:func:`delete_orphaned_audits`); its findings (``eo.audit_findings``) cascade. An audit
naming an epoch the prune keeps (a newer one, or one a gap or dead letter names) is kept
whole. So a long history of audits stays bounded by the epochs kept. Every statement
filters by pipeline and by the GIN index ``audits_epochs`` (``epoch_ids &&``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def count_audits(cur: Any, params: Mapping[str, Any], doomed_epochs: str) -> tuple[int, int]:
    """``(audits, findings)`` a prune would delete: the pipeline's audits every epoch of
    which is selected by the subquery ``doomed_epochs`` or already gone."""
    cur.execute(
        f"""
        WITH doomed AS (SELECT array_agg(epoch_id) AS ids FROM ({doomed_epochs}) d),
             orphaned AS (
                SELECT a.audit_id FROM eo.audits a, doomed
                 WHERE a.pipeline = %(pipeline)s AND a.epoch_ids && doomed.ids
                   AND NOT EXISTS (SELECT 1 FROM eo.epochs e
                                    WHERE e.epoch_id = ANY(a.epoch_ids) AND NOT e.epoch_id = ANY(doomed.ids)))
        SELECT (SELECT count(*) FROM orphaned),
               (SELECT count(*) FROM eo.audit_findings WHERE audit_id IN (SELECT audit_id FROM orphaned))
        """,
        params,
    )
    audits, findings = cur.fetchone()
    return int(audits), int(findings)


def delete_orphaned_audits(cur: Any, pipeline: str, epoch_ids: Sequence[int]) -> tuple[int, int]:
    """Delete ``pipeline``'s audits that name one of ``epoch_ids`` (just deleted, in the
    caller's transaction) and no epoch that still exists; returns ``(audits, findings)``
    deleted (the findings by cascade)."""
    cur.execute(
        """
        WITH gone AS (
            DELETE FROM eo.audits a
             WHERE a.pipeline = %s AND a.epoch_ids && %s::bigint[]
               AND NOT EXISTS (SELECT 1 FROM eo.epochs e WHERE e.epoch_id = ANY(a.epoch_ids))
            RETURNING a.audit_id)
        SELECT (SELECT count(*) FROM gone),
               (SELECT count(*) FROM eo.audit_findings WHERE audit_id IN (SELECT audit_id FROM gone))
        """,
        (pipeline, list(epoch_ids)),
    )
    audits, findings = cur.fetchone()
    return int(audits), int(findings)
