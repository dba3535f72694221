"""SQL of the kept audits (``eo.audits``, ``eo.audit_findings``; migration 0007).

Contract: :func:`insert_audit` stores one report (``AuditReport.to_json()``) and its kept
findings; with a ``run_key`` already stored, that run's row and findings are replaced (a
retried DAG task), so one run keeps one audit. The reads return
``ledger/model/audit_record.py`` values. All run in the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from airflow_provider_eo.ledger.model.audit_record import AuditRecord, EpochAudit

_COLUMNS = (
    "audit_id, pipeline, run_key, source, epoch_ids, verdict, findings_total, summary,"
    " started_at, finished_at"
)


def insert_audit(
    cur: Any, report: Mapping[str, Any], *, run_key: str | None, source: str, started_at: datetime
) -> int:
    """Store ``report`` (needs ``pipeline``, ``epoch_ids``, ``verdict``, ``findings_total``,
    ``findings``); returns its ``audit_id``. ``ValueError`` for a report without epochs."""
    epoch_ids = sorted(int(e) for e in report["epoch_ids"])
    if not epoch_ids:
        raise ValueError("an audit without epochs cannot be stored")
    if run_key is not None:
        cur.execute("DELETE FROM eo.audits WHERE run_key = %s", (run_key,))
    summary = {k: v for k, v in report.items() if k not in ("findings", "epoch_ids")}
    cur.execute(
        "INSERT INTO eo.audits (pipeline, run_key, source, epoch_ids, first_epoch, last_epoch,"
        " verdict, findings_total, summary, started_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING audit_id",
        (
            report["pipeline"],
            run_key,
            source,
            epoch_ids,
            epoch_ids[0],
            epoch_ids[-1],
            report["verdict"],
            report["findings_total"],
            json.dumps(summary, sort_keys=True),
            started_at,
        ),
    )
    audit_id = int(cur.fetchone()[0])
    findings = list(report.get("findings", ()))
    if findings:
        cur.executemany(
            "INSERT INTO eo.audit_findings (audit_id, seq, epoch_id, kind, finding)"
            " VALUES (%s, %s, %s, %s, %s)",
            [
                (audit_id, seq, f.get("epoch_id"), f["kind"], json.dumps(f, sort_keys=True))
                for seq, f in enumerate(findings)
            ],
        )
    return audit_id


def _record(row: Sequence[Any], findings: Sequence[dict[str, Any]] = ()) -> AuditRecord:
    audit_id, pipeline, run_key, source, epoch_ids, verdict, total, summary, started, finished = row
    return AuditRecord(
        int(audit_id), pipeline, run_key, source, tuple(epoch_ids), verdict, int(total),
        dict(summary), started, finished, tuple(findings),
    )  # fmt: skip


def fetch_audit(cur: Any, audit_id: int | None = None, *, run_key: str | None = None) -> AuditRecord | None:
    """The audit with ``audit_id`` (or the one of ``run_key``) with its kept findings, or None."""
    if audit_id is None:
        cur.execute(f"SELECT {_COLUMNS} FROM eo.audits WHERE run_key = %s", (run_key,))
    else:
        cur.execute(f"SELECT {_COLUMNS} FROM eo.audits WHERE audit_id = %s", (audit_id,))
    row = cur.fetchone()
    if row is None:
        return None
    cur.execute("SELECT finding FROM eo.audit_findings WHERE audit_id = %s ORDER BY seq", (row[0],))
    return _record(row, [dict(f) for (f,) in cur.fetchall()])


def list_audits(cur: Any, pipeline: str, limit: int) -> list[AuditRecord]:
    """The pipeline's ``limit`` newest audits, newest first, without their findings."""
    cur.execute(
        f"SELECT {_COLUMNS} FROM eo.audits WHERE pipeline = %s ORDER BY audit_id DESC LIMIT %s",
        (pipeline, limit),
    )
    return [_record(row) for row in cur.fetchall()]


def newest_epoch_audits(cur: Any, epoch_ids: Sequence[int]) -> dict[int, EpochAudit]:
    """Each of ``epoch_ids``' newest audit (epochs never audited are absent): one statement."""
    if not epoch_ids:
        return {}
    cur.execute(
        """
        SELECT DISTINCT ON (e.epoch_id)
               e.epoch_id, a.audit_id, a.verdict, a.finished_at,
               (SELECT count(*) FROM eo.audit_findings f
                 WHERE f.audit_id = a.audit_id AND f.epoch_id = e.epoch_id)
          FROM unnest(%s::bigint[]) AS e (epoch_id)
          JOIN eo.audits a ON a.epoch_ids @> ARRAY[e.epoch_id]
         ORDER BY e.epoch_id, a.audit_id DESC
        """,
        (list(epoch_ids),),
    )
    return {
        int(epoch_id): EpochAudit(int(epoch_id), int(audit_id), verdict, int(found), finished)
        for epoch_id, audit_id, verdict, finished, found in cur.fetchall()
    }
