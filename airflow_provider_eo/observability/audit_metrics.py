"""A kept audit's metrics, sent through Airflow's metrics (``airflow.sdk.observability.stats``).

Sent by the audit DAG's verdict task (``eo_audit__<pipeline>``) once per audit it stored,
never by ``eo-ledger audit`` (the CLI does not run inside Airflow: its audits are kept in
the ledger, and the Epochs page shows them). Airflow decides where they go, as for the
epoch metrics (``observability/epoch_metrics.py``): ``[metrics] statsd_on``,
``statsd_datadog_enabled``, ``otel_on``, or nowhere.

Each counter is sent under a dimensional name with the tag ``pipeline`` and, while
``[metrics] legacy_names_on`` is true (default), also under a name carrying the pipeline,
``eo.audit.records.<pipeline>``, a ``.`` inside it written ``__``.

=========================  =======  ======================================================
``eo.audit.records``       counter  records audited: written records plus dead letters of
                                    the audited ranges (the report's ``offsets``)
``eo.audit.discrepancies`` counter  findings counted (``findings_total``, the kept ones and
                                    those not shown); 0 for a clean audit
=========================  =======  ======================================================

Both are sent for every audit, a clean one too, so a dashboard sees audits happen.
"""

from __future__ import annotations

import logging

from airflow.sdk.configuration import conf
from airflow.sdk.observability import stats

from airflow_provider_eo.ledger.model.audit_record import AuditRecord
from airflow_provider_eo.observability.epoch_metrics import legacy_name_part

log = logging.getLogger(__name__)

RECORDS = "eo.audit.records"
DISCREPANCIES = "eo.audit.discrepancies"


def audited_records(record: AuditRecord) -> int:
    """Records the audit re-read and checked: ``records_written + dead_letters`` of its
    summary's ``offsets`` (skipped offsets hold no record; ranges not auditable are not
    counted). ``KeyError`` for a summary without ``offsets`` (not an audit report)."""
    offsets = record.summary["offsets"]
    return int(offsets["records_written"]) + int(offsets["dead_letters"])


def send_audit_metrics(record: AuditRecord) -> None:
    """Send ``record``'s counters (see the module doc). Raises what Airflow's stats
    client raises; the caller decides whether a failed send matters."""
    legacy = conf.getboolean("metrics", "legacy_names_on", fallback=True)
    tags = {"pipeline": record.pipeline}
    pipeline = legacy_name_part(record.pipeline)
    counts = {RECORDS: audited_records(record), DISCREPANCIES: record.findings_total}
    for name, count in counts.items():
        stats.incr(name, count, tags=tags)
        if legacy:
            stats.incr(f"{name}.{pipeline}", count)
    log.info(
        "audit metrics sent pipeline=%s audit_id=%s epoch_ids=%s-%s records=%s discrepancies=%s",
        record.pipeline, record.audit_id, min(record.epoch_ids), max(record.epoch_ids),
        counts[RECORDS], counts[DISCREPANCIES],
    )  # fmt: skip
