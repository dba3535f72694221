"""The audit's metrics (``observability/audit_metrics.py``) from an audit the real ledger
kept: the exact StatsD lines through Airflow's StatsD logger, the exact tagged points
through Airflow's OpenTelemetry logger (the fixtures of tests/metric_listeners.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.audit_record import AuditRecord
from airflow_provider_eo.observability.audit_metrics import send_audit_metrics
from tests.metric_listeners import (  # noqa: F401 (fixtures)
    OtlpListener,
    StatsdListener,
    otel_fixture,
    statsd_fixture,
)

pytestmark = pytest.mark.integration

PIPELINE = "audited.orders"  # a "." in the name: the legacy names write it "__"


def kept_audit(ledger: Ledger, findings_total: int) -> AuditRecord:
    """An audit of epochs 1-2 stored and read back: 9 records written, 1 dead letter,
    2 skipped offsets (not records), ``findings_total`` findings."""
    with ledger.transaction() as cur:
        cur.execute("INSERT INTO eo.pipelines (name) VALUES (%s) ON CONFLICT DO NOTHING", (PIPELINE,))
    report = {
        "pipeline": PIPELINE,
        "epoch_ids": [1, 2],
        "verdict": "discrepancies" if findings_total else "clean",
        "offsets": dict(ranges=2, offsets=12, records_written=9, dead_letters=1, skipped_offsets=2),
        "findings_total": findings_total,
        "findings": [{"kind": "cell_missing", "epoch_id": 2, "offset": 7}] if findings_total else [],
    }
    started = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)
    audit_id = ledger.record_audit(report, run_key=None, source="dag", started_at=started)
    found = ledger.audit(audit_id)
    assert found is not None
    return found


def test_statsd_receives_records_and_discrepancies_tagged_and_by_name(
    ledger: Ledger, statsd: StatsdListener
) -> None:
    send_audit_metrics(kept_audit(ledger, findings_total=4))
    assert sorted(statsd.drain()) == [
        "airflow.eo.audit.discrepancies.audited__orders:4|c",
        "airflow.eo.audit.discrepancies:4|c",
        "airflow.eo.audit.records.audited__orders:10|c",
        "airflow.eo.audit.records:10|c",
    ]
    send_audit_metrics(kept_audit(ledger, findings_total=0))  # a clean audit says so too
    assert sorted(statsd.drain()) == [
        "airflow.eo.audit.discrepancies.audited__orders:0|c",
        "airflow.eo.audit.discrepancies:0|c",
        "airflow.eo.audit.records.audited__orders:10|c",
        "airflow.eo.audit.records:10|c",
    ]


def test_opentelemetry_receives_the_pipeline_attribute(ledger: Ledger, otel: OtlpListener) -> None:
    from opentelemetry import metrics

    send_audit_metrics(kept_audit(ledger, findings_total=3))
    metrics.get_meter_provider().force_flush()  # type: ignore[attr-defined]
    received: list[tuple[str, dict[str, Any], Any]] = otel.points("airflow.eo.audit.")
    assert sorted((name, tuple(attrs.items()), value) for name, attrs, value in received) == [
        ("airflow.eo.audit.discrepancies", (("pipeline", PIPELINE),), 3),
        ("airflow.eo.audit.discrepancies.audited__orders", (), 3),
        ("airflow.eo.audit.records", (("pipeline", PIPELINE),), 10),
        ("airflow.eo.audit.records.audited__orders", (), 10),
    ]
