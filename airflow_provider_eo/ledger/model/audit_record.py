"""An audit as the ledger keeps it (``eo.audits``, ``eo.audit_findings``): no I/O.

The audit itself lives in ``airflow_provider_eo/audit/``; the ledger only stores its
answer, the JSON of ``AuditReport.to_json()``, and gives it back: :class:`AuditRecord` for
one audit, :class:`EpochAudit` for the badge an epoch shows (its newest audit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class AuditRecord:
    """One stored audit. ``summary`` is the report's JSON without ``findings``;
    ``findings`` holds the kept findings (empty unless asked for)."""

    audit_id: int
    pipeline: str
    run_key: str | None
    source: str
    epoch_ids: tuple[int, ...]
    verdict: str
    findings_total: int
    summary: dict[str, Any]
    started_at: datetime
    finished_at: datetime
    findings: tuple[dict[str, Any], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The JSON form (``eo-ledger audits`` and ``audit-show``, the audits API); a
        listing's records carry no findings (:meth:`brief`)."""
        return {
            "audit_id": self.audit_id,
            "pipeline": self.pipeline,
            "run_key": self.run_key,
            "source": self.source,
            "first_epoch": min(self.epoch_ids),
            "last_epoch": max(self.epoch_ids),
            "epochs": len(self.epoch_ids),
            "epoch_ids": sorted(self.epoch_ids),
            "verdict": self.verdict,
            "findings_total": self.findings_total,
            "summary": self.summary,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "findings": list(self.findings),
        }

    def brief(self) -> dict[str, Any]:
        """:meth:`to_json` without ``findings`` (what a listing of audits shows)."""
        answer = self.to_json()
        del answer["findings"]
        return answer


@dataclass(frozen=True)
class EpochAudit:
    """An epoch's newest audit: the audit's id and verdict, and how many of the findings it
    kept name this epoch (its window's verdict may come from other epochs)."""

    epoch_id: int
    audit_id: int
    verdict: str
    epoch_findings: int
    finished_at: datetime

    def to_json(self) -> dict[str, Any]:
        """``{audit_id, verdict, epoch_findings, finished_at}`` (the Epochs page's badge)."""
        return {
            "audit_id": self.audit_id,
            "verdict": self.verdict,
            "epoch_findings": self.epoch_findings,
            "finished_at": self.finished_at.isoformat(),
        }
