"""An audit's metrics, sent through Airflow's metrics (``airflow.sdk.observability.stats``).

Minimal version (the audit DAG's verdict task calls it); docs/audit.md names the metrics:

==========================  =======  ===============================================
``eo.audit.records``        counter  records the audit re-read and found written
``eo.audit.discrepancies``  counter  findings of the audit (``findings_total``)
==========================  =======  ===============================================

Tagged with ``pipeline`` and ``verdict``. Never raises: the audit is stored whatever
happens here (a failure is a warning).
"""

from __future__ import annotations

import logging

from airflow.sdk.observability import stats

from airflow_provider_eo.ledger.model.audit_record import AuditRecord

log = logging.getLogger(__name__)

RECORDS = "eo.audit.records"
DISCREPANCIES = "eo.audit.discrepancies"


def send_audit_metrics(record: AuditRecord) -> None:
    """Send ``record``'s records audited and findings (see the module doc)."""
    tags = {"pipeline": record.pipeline, "verdict": record.verdict}
    records = int(record.summary.get("offsets", {}).get("records_written", 0))
    try:
        stats.incr(RECORDS, records, tags=tags)
        stats.incr(DISCREPANCIES, record.findings_total, tags=tags)
    except Exception as exc:
        log.warning(
            "audit metrics not sent pipeline=%s audit_id=%s: %s", record.pipeline, record.audit_id, exc
        )
        return
    log.info(
        "audit metrics sent pipeline=%s audit_id=%s records=%d discrepancies=%d",
        record.pipeline, record.audit_id, records, record.findings_total,
    )  # fmt: skip
