"""The kept audits in the "eo" UI plugin, on a real ledger (FastAPI's TestClient): each
epoch's newest audit as a badge on the Epochs page (one ledger read for every epoch shown),
an audit's own page with its window, counts, verdict and findings, the JSON API
(``/api/audits/{id}``, ``/api/pipelines/{p}/audits``) and its OpenAPI schema, and a
hidden pipeline's audits answered exactly as unknown ones. The audits are stored through
``Ledger.record_audit`` as ``eo-ledger audit`` and the audit DAG store them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg2
import pytest
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from fastapi import Request
from fastapi.testclient import TestClient

from airflow_provider_eo.audit.findings import Finding, FindingKind
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.audit_record import EpochAudit
from airflow_provider_eo.plugins.access import PipelineAccess, StreamDagReaders
from airflow_provider_eo.plugins.app import create_app
from tests.conftest import StackInfo
from tests.dag_denying_auth_manager import DagDenyingAuthManager
from tests.integration.epochs_ui_support import Ledgered, ledgered_data, rows

pytestmark = pytest.mark.integration

STARTED = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)
HOSTILE_ROW = b"<b>row</b>"


def report(pipeline: str, epoch_ids: list[int], findings: list[dict[str, Any]]) -> dict[str, Any]:
    """An ``AuditReport.to_json()`` of ``epoch_ids`` keeping ``findings``."""
    return {
        "pipeline": pipeline,
        "window": {"first_epoch": min(epoch_ids), "last_epoch": max(epoch_ids), "epochs": len(epoch_ids)},
        "epoch_ids": epoch_ids,
        "verdict": "discrepancies" if findings else "clean",
        "offsets": {"ranges": 2, "offsets": 8, "records_written": 6, "dead_letters": 1, "skipped_offsets": 1},
        "cells": {"verified": 11, "covered_by_newer": 2, "deletes_verified": 0, "later_data": 0},
        "not_auditable": [],
        "findings_by_kind": dict(sorted({f["kind"]: 1 for f in findings}.items())),
        "findings_total": len(findings),
        "findings_not_shown": 0,
        "findings": findings,
        "hbase_calls": 4,
    }


class Audited:
    """The ledgered data plus three kept audits: ``first`` (orders: the committed epoch,
    clean), ``second`` (orders: the committed epoch and the backfill; a cell missing and a
    hostile row's bytes differing in the committed epoch, the group behind), ``evil`` (the
    evil pipeline's epoch, clean, from a DAG run whose id is markup)."""

    def __init__(self, ledgered: Ledgered) -> None:
        self.ledgered = ledgered
        c, b = ledgered.committed.epoch_id, ledgered.backfill.epoch_id
        self.findings = [
            Finding(FindingKind.CELL_MISSING, "no cell", c, ledgered.topic, 0, 3, b"k3", b"d:name", 3, b"ann",
                    "nothing").to_json(),
            Finding(FindingKind.CELL_BYTES_DIFFER, "other bytes", c, ledgered.topic, 0, 4, HOSTILE_ROW,
                    b"d:<i>", 4, b"x", "'y' at version 4").to_json(),
            Finding(FindingKind.GROUP_BEHIND, "group at 2", None, ledgered.topic, 0, 5).to_json(),
        ]  # fmt: skip
        with Ledger(ledgered.dsn) as ledger:
            self.first = ledger.record_audit(
                report("orders", [c], []), run_key=None, source="cli", started_at=STARTED
            )
            self.second = ledger.record_audit(
                report("orders", [c, b], self.findings), run_key=None, source="cli", started_at=STARTED
            )
            self.evil = ledger.record_audit(
                report("evil", [ledgered.evil.epoch_id], []),
                run_key="eo_audit__evil/<b>r</b>",
                source="dag",
                started_at=STARTED,
            )

    def finished_at(self, audit_id: int) -> str:
        with psycopg2.connect(self.ledgered.dsn) as conn, conn.cursor() as cur:
            cur.execute("SELECT finished_at FROM eo.audits WHERE audit_id = %s", (audit_id,))
            return str(cur.fetchone()[0].isoformat())


@pytest.fixture(scope="module")
def audited(stack: StackInfo, module_topic_factory: Callable[..., str]) -> Iterator[Audited]:
    with ledgered_data(stack, module_topic_factory) as data:
        yield Audited(data)


class CountedLedger(Ledger):
    """The real ledger, counting its calls of the badge read."""

    calls: list[list[int]] = []

    def epoch_audits(self, epoch_ids: Sequence[int]) -> dict[int, EpochAudit]:
        CountedLedger.calls.append(list(epoch_ids))
        return super().epoch_audits(epoch_ids)


@pytest.fixture
def client(audited: Audited) -> TestClient:
    return TestClient(create_app(lambda: CountedLedger(audited.ledgered.dsn), watermarks=lambda: None))


def audit_cells(html: str) -> dict[int, str]:
    """Epoch id -> the inner HTML of its audit cell."""
    return {
        int(epoch_id): cell
        for epoch_id, cell in re.findall(
            r'<tr class="epoch" id="epoch-(\d+)">.*?<td class="audit-cell">(.*?)</td></tr>', html
        )
    }


def test_epochs_page_badges_each_epoch_with_its_newest_audit_in_one_read(
    client: TestClient, audited: Audited
) -> None:
    led = audited.ledgered
    CountedLedger.calls.clear()
    html = client.get("/").text
    every = [led.committed, led.aborted, led.open, led.backfill, led.evil]
    assert CountedLedger.calls == [[e.epoch_id for e in every]]  # one read for every epoch shown

    def badge(audit_id: int, kind: str, verdict: str, found: int, label: str) -> str:
        return (
            f'<a class="s audit a-{kind}" href="audits/{audit_id}" data-audit-id="{audit_id}" '
            f'data-verdict="{verdict}" data-epoch-findings="{found}" '
            f'title="audit {audit_id}, {audited.finished_at(audit_id)}">{label}</a>'
        )

    dash = '<span class="muted">-</span>'
    assert audit_cells(html) == {
        led.committed.epoch_id: badge(audited.second, "findings", "discrepancies", 2, "2 findings"),
        led.backfill.epoch_id: badge(audited.second, "window", "discrepancies", 0, "window: discrepancies"),
        led.evil.epoch_id: badge(audited.evil, "clean", "clean", 0, "clean"),
        led.aborted.epoch_id: dash,
        led.open.epoch_id: dash,
    }
    assert "<th>Error</th><th>Audit</th></tr>" in html


def test_an_epochs_page_shows_its_newest_audit(client: TestClient, audited: Audited) -> None:
    led = audited.ledgered
    page = client.get(f"/epochs/{led.committed.epoch_id}").text
    second = audited.second
    assert (
        f'<tr><th>audit</th><td><a class="s audit a-findings" href="../audits/{second}" '
        f'data-audit-id="{second}" data-verdict="discrepancies" data-epoch-findings="2" '
        f'title="audit {second}, {audited.finished_at(second)}">2 findings</a></td></tr>'
    ) in page
    unaudited = client.get(f"/epochs/{led.open.epoch_id}").text
    assert '<tr><th>audit</th><td><span class="muted">-</span></td></tr>' in unaudited


def test_audit_page_lists_window_counts_verdict_and_findings(client: TestClient, audited: Audited) -> None:
    led = audited.ledgered
    c, b = led.committed.epoch_id, led.backfill.epoch_id
    page = client.get(f"/audits/{audited.second}")
    assert page.status_code == 200
    html = page.text
    assert f'<h1 id="audit" data-audit-id="{audited.second}">Audit {audited.second}</h1>' in html
    assert '<span class="s audit a-findings" id="verdict">discrepancies</span>' in html
    assert '<td id="findings-total" data-total="3" data-kept="3">3 (3 kept, 0 not shown)</td>' in html
    low, high = sorted((c, b))
    assert (
        f'<td>epochs {low}..{high} (2 committed): <span id="window-epochs">'
        f'<a class="epoch-link" href="../epochs/{low}">{low}</a> '
        f'<a class="epoch-link" href="../epochs/{high}">{high}</a></span></td>'
    ) in html
    assert re.findall(r'<td class="num" data-count="([a-z_]+)">(\d+)</td>', html) == [
        ("ranges", "2"), ("offsets", "8"), ("records_written", "6"), ("dead_letters", "1"),
        ("skipped_offsets", "1"), ("verified", "11"), ("covered_by_newer", "2"), ("deletes_verified", "0"),
        ("later_data", "0"), ("cell_bytes_differ", "1"), ("cell_missing", "1"), ("group_behind", "1"),
    ]  # fmt: skip
    topic = led.topic
    link = f'<a class="epoch-link" href="../epochs/{c}">{c}</a>'
    assert rows(html, "finding") == [
        f'<td class="num">1</td><td>cell_missing</td><td>{link}</td>'
        f"<td><code>{topic}[0] @ 3</code></td><td><code>k3</code></td><td><code>d:name</code></td>"
        '<td class="num">3</td><td><code>ann</code></td><td><code>nothing</code></td><td>no cell</td>',
        f'<td class="num">2</td><td>cell_bytes_differ</td><td>{link}'
        f"</td><td><code>{topic}[0] @ 4</code></td><td><code>&lt;b&gt;row&lt;/b&gt;</code></td>"
        '<td><code>d:&lt;i&gt;</code></td><td class="num">4</td><td><code>x</code></td>'
        "<td><code>&#x27;y&#x27; at version 4</code></td><td>other bytes</td>",
        '<td class="num">3</td><td>group_behind</td><td><span class="muted">-</span></td>'
        f'<td><code>{topic}[0] @ 5</code></td><td><span class="muted">-</span></td>'
        '<td><span class="muted">-</span></td><td class="num"></td><td><span class="muted">-</span></td>'
        '<td><span class="muted">-</span></td><td>group at 2</td>',
    ]
    finding_rows = r'<tr class="finding" data-kind="(\w+)" data-epoch-id="(\d*)" data-offset="(\d+)">'
    assert re.findall(finding_rows, html) == [
        ("cell_missing", str(c), "3"), ("cell_bytes_differ", str(c), "4"), ("group_behind", "", "5"),
    ]  # fmt: skip
    assert "<b>row</b>" not in html and html.count("<script>") == 1
    # a DAG's audit names its run (escaped); a clean one lists no finding
    evil = client.get(f"/audits/{audited.evil}").text
    assert "<tr><th>Source</th><td>dag <code>eo_audit__evil/&lt;b&gt;r&lt;/b&gt;</code></td></tr>" in evil
    assert rows(evil, "finding") == [] and "<tr><td colspan=10 class=muted>none</td></tr>" in evil
    missing = client.get("/audits/999999")
    assert missing.status_code == 404 and "audit 999999 does not exist" in missing.text


def stored(audited: Audited, audit_id: int) -> dict[str, Any]:
    """The audit's row and kept findings as the API answers them, read directly."""
    with psycopg2.connect(audited.ledgered.dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT pipeline, run_key, source, epoch_ids, verdict, findings_total, summary, started_at,"
            " finished_at FROM eo.audits WHERE audit_id = %s",
            (audit_id,),
        )
        pipeline, run_key, source, epoch_ids, verdict, total, summary, started, finished = cur.fetchone()
        cur.execute("SELECT finding FROM eo.audit_findings WHERE audit_id = %s ORDER BY seq", (audit_id,))
        findings = [row[0] for row in cur.fetchall()]
    return {
        "audit_id": audit_id, "pipeline": pipeline, "run_key": run_key, "source": source,
        "first_epoch": min(epoch_ids), "last_epoch": max(epoch_ids), "epochs": len(epoch_ids),
        "epoch_ids": sorted(epoch_ids), "verdict": verdict, "findings_total": total, "summary": summary,
        "started_at": started.isoformat(), "finished_at": finished.isoformat(), "findings": findings,
    }  # fmt: skip


def test_audits_json_api_answers_the_kept_rows(client: TestClient, audited: Audited) -> None:
    second = stored(audited, audited.second)
    assert second["findings"] == audited.findings and "findings" not in second["summary"]
    assert client.get(f"/api/audits/{audited.second}").json() == second
    brief = [
        {k: v for k, v in stored(audited, a).items() if k != "findings"}
        for a in (audited.second, audited.first)
    ]
    assert client.get("/api/pipelines/orders/audits").json() == brief
    assert client.get("/api/pipelines/orders/audits", params={"limit": 1}).json() == brief[:1]
    assert client.get("/api/pipelines/evil/audits").json()[0]["run_key"] == "eo_audit__evil/<b>r</b>"
    unknown = client.get("/api/audits/999999")
    assert (unknown.status_code, unknown.json()) == (
        404, {"error": "audit 999999 does not exist", "type": "AuditNotFound"},
    )  # fmt: skip
    nope = client.get("/api/pipelines/nope/audits")
    assert (nope.status_code, nope.json()) == (
        404, {"error": "pipeline 'nope' does not exist", "type": "PipelineNotFound"},
    )  # fmt: skip
    assert client.get("/api/pipelines/orders/audits", params={"limit": 0}).json()["type"] == "InvalidRequest"


def test_a_hidden_pipelines_audits_answer_as_unknown_ones(
    audited: Audited, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW__EO_TEST__DENIED_DAGS", "alice:eo_stream__evil")
    manager = DagDenyingAuthManager()

    async def as_alice(request: Request) -> PipelineAccess:
        return StreamDagReaders(manager, SimpleAuthManagerUser(username="alice", role="viewer"))

    alice = TestClient(
        create_app(lambda: Ledger(audited.ledgered.dsn), access=as_alice, watermarks=lambda: None)
    )
    hidden, unknown = alice.get(f"/api/audits/{audited.evil}"), alice.get("/api/audits/999999")
    assert (hidden.status_code, hidden.json()["type"]) == (unknown.status_code, unknown.json()["type"])
    assert alice.get("/api/pipelines/evil/audits").json()["type"] == "PipelineNotFound"
    page = alice.get(f"/audits/{audited.evil}")
    assert page.status_code == 404
    assert page.text == alice.get("/audits/999999").text.replace("999999", str(audited.evil))
    assert alice.get(f"/api/audits/{audited.second}").status_code == 200


def test_openapi_schema_describes_the_audit_answers(audited: Audited, client: TestClient) -> None:
    schema = client.get("/api/openapi.json").json()
    models = schema["components"]["schemas"]
    answer = client.get(f"/api/audits/{audited.second}").json()
    assert list(models["AuditDetail"]["properties"]) == list(answer)
    assert list(models["Audit"]["properties"]) == [k for k in answer if k != "findings"]
    assert list(models["AuditFinding"]["properties"]) == list(audited.findings[0])

    def answer_schema(path: str, status: str) -> Any:
        return schema["paths"][path]["get"]["responses"][status]["content"]["application/json"]["schema"]

    ref = "#/components/schemas/"
    assert answer_schema("/api/audits/{audit_id}", "200") == {"$ref": ref + "AuditDetail"}
    assert answer_schema("/api/pipelines/{name}/audits", "200")["items"] == {"$ref": ref + "Audit"}
    assert answer_schema("/api/audits/{audit_id}", "404") == {"$ref": ref + "ErrorBody"}
    assert json.dumps(schema).count("AuditNotFound") >= 1
