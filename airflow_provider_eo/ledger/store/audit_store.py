"""The kept audits in PostgreSQL (``AuditResults``, ``ledger/model/ledger_roles.py``): what
the audit DAG and ``eo-ledger audit`` store, what the Epochs UI and the CLI read back.
Each call is one short transaction; nothing here changes an epoch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from airflow_provider_eo.ledger.model.audit_record import AuditRecord, EpochAudit
from airflow_provider_eo.ledger.store import audit_rows
from airflow_provider_eo.ledger.store.connection import OnLedgerConnection


class PostgresAudits(OnLedgerConnection):
    """Store an audit's report; read audits back by id, by run, per pipeline, per epoch."""

    def record_audit(
        self, report: Mapping[str, Any], *, run_key: str | None, source: str, started_at: datetime
    ) -> int:
        """Store ``report`` (``AuditReport.to_json()``) and its kept findings; returns the
        ``audit_id``. A ``run_key`` stored before is replaced (one audit per run)."""
        with self._db.transaction() as cur:
            return audit_rows.insert_audit(cur, report, run_key=run_key, source=source, started_at=started_at)

    def audit(self, audit_id: int) -> AuditRecord | None:
        """The audit ``audit_id`` with its kept findings, or None."""
        with self._db.transaction() as cur:
            return audit_rows.fetch_audit(cur, audit_id)

    def audit_of_run(self, run_key: str) -> AuditRecord | None:
        """The audit stored by the run ``run_key`` with its kept findings, or None."""
        with self._db.transaction() as cur:
            return audit_rows.fetch_audit(cur, run_key=run_key)

    def audits(self, pipeline: str, limit: int = 50) -> list[AuditRecord]:
        """The pipeline's ``limit`` newest audits, newest first, without findings."""
        with self._db.transaction() as cur:
            return audit_rows.list_audits(cur, pipeline, limit)

    def epoch_audits(self, epoch_ids: Sequence[int]) -> dict[int, EpochAudit]:
        """Each epoch's newest audit; epochs never audited are absent."""
        with self._db.transaction() as cur:
            return audit_rows.newest_epoch_audits(cur, epoch_ids)
