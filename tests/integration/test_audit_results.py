"""The kept audits (``eo.audits``, ``eo.audit_findings``) on a real PostgreSQL: a report
stored and read back exactly, one audit per run, an epoch's newest audit for its badge."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow_provider_eo.ledger import Ledger

STARTED = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)


def _report(pipeline: str, epoch_ids: list[int], findings: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "pipeline": pipeline,
        "window": {"first_epoch": min(epoch_ids), "last_epoch": max(epoch_ids), "epochs": len(epoch_ids)},
        "epoch_ids": epoch_ids,
        "verdict": "discrepancies" if findings else "clean",
        "offsets": {
            "ranges": 2,
            "offsets": 10,
            "records_written": 9,
            "dead_letters": 1,
            "skipped_offsets": 0,
        },
        "findings_total": len(findings) + (3 if findings else 0),
        "findings_not_shown": 3 if findings else 0,
        "findings": findings,
    }


def _finding(epoch_id: int, offset: int) -> dict[str, Any]:
    return {"kind": "cell_missing", "epoch_id": epoch_id, "topic": "t", "partition": 0, "offset": offset}


def test_an_audit_is_kept_whole_replaced_per_run_and_badges_each_epoch(ledger: Ledger) -> None:
    with ledger.transaction() as cur:
        cur.execute("INSERT INTO eo.pipelines (name) VALUES ('audited')")
    clean = ledger.record_audit(
        _report("audited", [3, 1, 2], []), run_key=None, source="cli", started_at=STARTED
    )
    findings = [_finding(2, 7), _finding(3, 11)]
    first_try = ledger.record_audit(
        _report("audited", [2, 3], findings[:1]),
        run_key="eo_audit__audited/r1",
        source="dag",
        started_at=STARTED,
    )
    retried = ledger.record_audit(
        _report("audited", [2, 3], findings), run_key="eo_audit__audited/r1", source="dag", started_at=STARTED
    )

    assert ledger.audit(first_try) is None  # the retry replaced its run's row
    kept = ledger.audit_of_run("eo_audit__audited/r1")
    assert kept is not None and kept.audit_id == retried
    answer = kept.to_json()
    assert (answer["first_epoch"], answer["last_epoch"], answer["epochs"], answer["source"]) == (
        2,
        3,
        2,
        "dag",
    )
    assert (answer["verdict"], answer["findings_total"], answer["findings"]) == ("discrepancies", 5, findings)
    assert answer["summary"]["findings_not_shown"] == 3 and "findings" not in answer["summary"]
    assert [a.audit_id for a in ledger.audits("audited")] == [retried, clean]
    badges = ledger.epoch_audits([1, 2, 3, 4])
    assert {e: (b.audit_id, b.verdict, b.epoch_findings) for e, b in badges.items()} == {
        1: (clean, "clean", 0),
        2: (retried, "discrepancies", 1),
        3: (retried, "discrepancies", 1),
    }
