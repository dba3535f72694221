"""The kept audits in the browser: an epoch's audit badge on the Epochs page (inside
Airflow's UI) and, one click on, the audit's own page with its verdict, counts and
findings, read as the user sees them (headless Chromium, Selenium).

The walkthrough's pipeline (:func:`~tests.browser.walkthrough.walk_on`: its topic, table
and DAGs on the session's Airflow) gets one committed stream epoch in the stack's ledger
(:func:`~tests.integration.ledger_support.run_epoch`, no Spark) and one kept audit of it
with two findings, stored through ``Ledger.record_audit`` as ``eo-ledger audit`` and the
audit DAG store theirs. What the audit checks is tested in tests/integration/test_audit*.py;
here, what the pages show of a stored one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from airflow_provider_eo.ledger import Ledger
from tests.airflow_server import AirflowServer
from tests.browser import airflow_ui as ui
from tests.browser import epochs_page
from tests.browser.browser import Browser
from tests.browser.walkthrough import Walk, walk_on
from tests.conftest import StackInfo
from tests.integration.ledger_support import make_spec, run_epoch, stack_kafka_hook

pytestmark = [pytest.mark.browser, pytest.mark.airflow, pytest.mark.integration]

STARTED = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Audited:
    walk: Walk
    epoch_id: int
    audit_id: int


def _report(walk: Walk, epoch_id: int) -> dict[str, Any]:
    """The ``AuditReport.to_json()`` of the epoch: 11 records, two cell findings."""
    findings = [
        {"kind": "cell_missing", "epoch_id": epoch_id, "topic": walk.topic, "partition": 1, "offset": 3,
         "row": "p1-3", "column": "d:day", "expected_version": 3, "expected_bytes": "2026-11-27",
         "hbase_holds": "nothing", "detail": "no cell at or above the version"},
        {"kind": "cell_bytes_differ", "epoch_id": epoch_id, "topic": walk.topic, "partition": 0, "offset": 2,
         "row": "p0-2", "column": "d:key", "expected_version": 2, "expected_bytes": "p0-2",
         "hbase_holds": "'CORRUPT' at version 2", "detail": "other bytes at the version"},
    ]  # fmt: skip
    return {
        "pipeline": walk.name,
        "window": {"first_epoch": epoch_id, "last_epoch": epoch_id, "epochs": 1},
        "epoch_ids": [epoch_id],
        "verdict": "discrepancies",
        "offsets": dict(ranges=2, offsets=11, records_written=11, dead_letters=0, skipped_offsets=0),
        "cells": {"verified": 20, "covered_by_newer": 0, "deletes_verified": 0, "later_data": 0},
        "not_auditable": [],
        "findings_by_kind": {"cell_bytes_differ": 1, "cell_missing": 1},
        "findings_total": 2,
        "findings_not_shown": 0,
        "findings": findings,
        "hbase_calls": 2,
    }


@pytest.fixture(scope="module")
def audited(stack: StackInfo, airflow_server: AirflowServer) -> Iterator[Audited]:
    with walk_on(stack, airflow_server) as walk, Ledger(stack.ledger_dsn) as ledger:
        spec = make_spec(walk.name, topics=[walk.topic], group_id=f"eo-{walk.name}")
        epoch = run_epoch(ledger, spec, stack_kafka_hook(stack), "audited-1", dag_id=walk.stream)
        assert epoch is not None
        audit_id = ledger.record_audit(
            _report(walk, epoch.epoch_id), run_key=None, source="cli", started_at=STARTED
        )
        yield Audited(walk, epoch.epoch_id, audit_id)


def test_the_epochs_badge_leads_to_the_audits_page_and_its_findings(
    browser: Browser, audited: Audited
) -> None:
    walk, epoch_id, audit_id = audited.walk, audited.epoch_id, audited.audit_id
    ui.log_in(browser, walk.server.url, walk.server.username, walk.server.password)
    browser.open(f"{walk.server.url}/plugin/eo-epochs/eo/?pipeline={walk.name}")
    epochs_page.enter_epochs_iframe(browser, f"pipeline={walk.name}")
    badge = browser.by_xpath(
        f"//table[@id='epochs']//tr[contains(@class, 'epoch')][td[1][normalize-space(.)='{epoch_id}']]"
        "//td[@class='audit-cell']/a"
    )
    assert (browser.text_of(badge), badge.get_attribute("data-audit-id")) == ("2 findings", str(audit_id))
    browser.shot("audit-badge")

    browser.click(badge)
    browser.wait(
        f"audit {audit_id}'s page",
        lambda: browser.element("h1#audit").get_attribute("data-audit-id") == str(audit_id),
    )
    assert browser.text_of(browser.element("h1#audit")) == f"Audit {audit_id}"
    assert browser.text_of(browser.element("#verdict")) == "discrepancies"
    assert browser.text_of(browser.element("#findings-total")) == "2 (2 kept, 0 not shown)"
    counts = {
        str(cell.get_attribute("data-count")): browser.text_of(cell)
        for cell in browser.driver.find_elements(By.CSS_SELECTOR, "#offset-counts td[data-count]")
    }
    assert counts == {
        "ranges": "2", "offsets": "11", "records_written": "11", "dead_letters": "0", "skipped_offsets": "0",
    }  # fmt: skip
    rows = browser.driver.find_elements(By.CSS_SELECTOR, "#findings tr.finding")
    cells = [browser.text_of(c) for c in rows[0].find_elements(By.TAG_NAME, "td")]
    assert len(rows) == 2 and cells == [
        "1", "cell_missing", str(epoch_id), f"{walk.topic}[1] @ 3", "p1-3", "d:day", "3", "2026-11-27",
        "nothing", "no cell at or above the version",
    ]  # fmt: skip
    assert [r.get_attribute("data-kind") for r in rows] == ["cell_missing", "cell_bytes_differ"]
    browser.shot("audit-page")
