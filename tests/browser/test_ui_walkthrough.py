"""A person's walk through Airflow 3.3's UI on the session's real Airflow (``airflow_server``),
in headless Chromium, with Spark, the ledger, Kafka and HBase real. The tests run in order
on one pipeline (data: tests/browser/walkthrough.py); each asserts on what the page shows
and on the ledger and HBase:

1. sign in through the Simple auth manager's form and land on Home;
2. trigger ``eo_stream__<p>`` from its page; the grid, the run page and the run list
   show the run succeed; the epoch drained both partitions;
3. trigger ``eo_backfill__<p>`` through its Trigger form (partition 1, offsets [1, 4));
   exactly those records are rewritten as one backfill epoch;
4. run Airflow's Backfill dialog over one whole day: one run, and exactly that day's
   records of both partitions are rewritten, nothing else;
5. the Epochs page (navigation entry and the DAG's Epochs tab) lists the three epochs
   with their exact ranges and, after producing more records, the exact lag per partition;
6. the pipeline's charts draw exactly the ledger's rows: every point's ``data-*`` values
   equal those computed from eo.epochs, eo.epoch_transitions and the lag
   samples, read directly from PostgreSQL;
7. links both ways: an epoch's row to its page, its page to the run's grid and the commit
   task's log in Airflow, the write task's "Epoch" extra link back to the epoch's page.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from selenium.webdriver.common.by import By

from airflow_provider_eo.ui_links import epoch_page_in_airflow
from tests.airflow_server import AirflowServer
from tests.browser import airflow_ui as ui
from tests.browser import epochs_page
from tests.browser.browser import Browser
from tests.browser.walkthrough import Walk, hbase_rows, in_day, recreate_table, scan, walk_on
from tests.chart_rows import expected_points, raw_epochs, raw_samples
from tests.conftest import StackInfo
from tests.kafka_helpers import produce

pytestmark = [pytest.mark.browser, pytest.mark.airflow, pytest.mark.spark, pytest.mark.integration]

RUN_TIMEOUT_S = 420  # a Spark write on 2 busy cores; the wait ends as soon as the run does
EXTRA_RECORDS = {0: 3, 1: 1}  # produced before step 5: the lag each partition must show


@pytest.fixture(scope="module")
def walk(stack: StackInfo, airflow_server: AirflowServer) -> Iterator[Walk]:
    with walk_on(stack, airflow_server) as opened:
        yield opened


def _wait_for_success(browser: Browser, walk: Walk, dag_id: str, run_id: str) -> None:
    """Wait through the REST API (cheap), naming the task states when the run failed. The
    browser waits on a blank page: the UI would refresh the run every few seconds (requests
    to the API server, re-rendering) on the cores Spark runs on; the run's page is opened
    afresh afterwards."""
    browser.open("about:blank")
    state = walk.server.wait_for_run(dag_id, run_id, timeout=RUN_TIMEOUT_S)
    assert state == "success", f"{dag_id} {run_id}: {state}, tasks {walk.server.task_states(dag_id, run_id)}"


def _see_run_succeeded(browser: Browser, walk: Walk, dag_id: str, run_id: str) -> list[ui.TaskRow]:
    """On the run's page: the heading's badge and the grid's tooltip say Success; returns
    the Task Instances table."""
    browser.open(f"{walk.server.url}/dags/{dag_id}/runs/{run_id}")
    browser.wait(
        f"run {run_id} to show Success", lambda: ui.run_header_state(browser, run_id) == "Success", 60
    )

    def success_tooltip() -> str | None:
        tip = ui.grid_tooltip(browser, run_id)
        return tip if "State: Success" in tip else None

    tooltip = browser.wait("the grid's tooltip to say Success", success_tooltip)
    assert f"Run ID: {run_id} State: Success" in tooltip
    browser.shot("grid-success")
    return browser.wait("the task table", lambda: ui.task_rows(browser))


def test_log_in_through_the_form(browser: Browser, walk: Walk) -> None:
    ui.log_in(browser, walk.server.url, walk.server.username, walk.server.password)
    browser.by_xpath("//*[self::h1 or self::h2][normalize-space(.)='Welcome']")
    assert browser.url == walk.server.url + "/"
    nav = browser.element("[data-testid=nav-sidebar]").text.split("\n")
    assert {"Home", "Dags", "Epochs"} <= set(nav)
    browser.shot("home")
    walk.done.add("login")


def test_trigger_stream_run_and_watch_it_succeed(browser: Browser, walk: Walk) -> None:
    walk.require("login")
    ui.open_dag(browser, walk.server.url, walk.stream)
    dialog = ui.open_trigger_dialog(browser, f"Trigger Dag - {walk.stream}")
    browser.shot("trigger-dialog")
    browser.click(browser.element("[data-testid=trigger-dag-submit]", within=dialog))
    run_id = browser.wait("the new run's page", lambda: ui.run_id_from_url(browser, walk.stream))
    browser.shot("run-started")
    _wait_for_success(browser, walk, walk.stream, run_id)

    rows = _see_run_succeeded(browser, walk, walk.stream, run_id)
    (epoch_id,) = {r.label.split()[1] for r in rows if r.label}
    label = f"epoch {epoch_id} stream, 11 records: {walk.topic}[0]=[0,6) {walk.topic}[1]=[0,5)"
    assert rows == [
        ui.TaskRow("commit", label, "Success"),
        ui.TaskRow("recover", "", "Success"),
        ui.TaskRow("reserve", "", "Success"),
        ui.TaskRow("write", label, "Success"),
    ]
    browser.open(f"{walk.server.url}/dags/{walk.stream}/runs")
    listed = browser.wait("the run list", lambda: ui.run_list_row(browser, run_id))
    assert (listed["state"], listed["run_type"], listed["triggering_user_name"]) == (
        "Success",
        "Manual",
        "admin",
    )
    browser.shot("run-list")

    assert walk.epochs() == [("stream", "COMMITTED", run_id, [(0, 0, 6), (1, 0, 5)])]
    assert scan(walk.stack, walk.name) == hbase_rows(walk.records)
    walk.runs["stream"] = run_id
    walk.done.add("stream")


def test_trigger_form_backfills_one_partition_range(browser: Browser, walk: Walk) -> None:
    walk.require("login", "stream")
    recreate_table(walk.stack, walk.name)  # what the backfill rewrites is then all there is
    ui.open_dag(browser, walk.server.url, walk.backfill)
    dialog = ui.open_trigger_dialog(browser, f"Trigger Dag - {walk.backfill}")
    ui.type_json_param(browser, dialog, "Partitions", "[1")
    browser.replace_text(dialog.find_element(By.NAME, "element_start_offset"), "1")
    browser.replace_text(dialog.find_element(By.NAME, "element_end_offset"), "4")
    browser.wait(
        "the Partitions editor to hold [1]",
        lambda: "SyntaxError" not in ui.param_field(dialog, "Partitions").text,
    )
    browser.shot("trigger-form-filled")
    browser.click(browser.element("[data-testid=trigger-dag-submit]", within=dialog))
    run_id = browser.wait("the new run's page", lambda: ui.run_id_from_url(browser, walk.backfill))
    conf = walk.server.api("GET", f"dags/{walk.backfill}/dagRuns/{run_id}")["conf"]
    assert conf == {
        "topics": [],
        "partitions": [1],
        "start_offset": 1,
        "end_offset": 4,
        "start_time": None,
        "end_time": None,
        "dead_letters_of_epoch": None,
    }
    _wait_for_success(browser, walk, walk.backfill, run_id)

    rows = _see_run_succeeded(browser, walk, walk.backfill, run_id)
    chunk = f"chunk 1/1, 3 offsets: {walk.topic}[1]=[1,4)"
    assert rows == [
        ui.TaskRow("chunk.commit", chunk, "Success"),
        ui.TaskRow("chunk.write", chunk, "Success"),
        ui.TaskRow("plan", "", "Success"),
        ui.TaskRow("release", "", "Success"),
    ]
    assert walk.epochs()[1:] == [("backfill", "COMMITTED", run_id, [(1, 1, 4)])]
    wanted = [r for r in walk.records if r.partition == 1 and 1 <= r.offset < 4]
    assert scan(walk.stack, walk.name) == hbase_rows(wanted)
    walk.runs["form"] = run_id
    walk.done.add("form")


def test_backfill_dialog_rewrites_exactly_one_day(browser: Browser, walk: Walk) -> None:
    walk.require("login", "stream")
    recreate_table(walk.stack, walk.name)
    day, last_minute = walk.day, walk.day + timedelta(days=1) - timedelta(minutes=1)
    ui.open_dag(browser, walk.server.url, walk.backfill)
    ui.open_trigger_dialog(browser, f"Trigger Dag - {walk.backfill}")
    dialog = ui.choose_backfill(browser, walk.backfill)
    start, end = dialog.find_elements(By.CSS_SELECTOR, "[data-testid=datetime-input]")[:2]
    ui.pick_datetime(browser, start, day)
    ui.pick_datetime(browser, end, last_minute)
    assert (start.text, end.text) == (ui.ui_datetime(day), ui.ui_datetime(last_minute))
    browser.wait("the dry run's answer", lambda: "1 run will be triggered." in dialog.text)
    browser.shot("backfill-dialog-filled")
    browser.click(browser.by_xpath(".//button[normalize-space(.)='Run Backfill']", within=dialog))
    banner = browser.by_xpath("//*[starts-with(normalize-space(.), 'Backfill in progress')]", timeout=60)
    browser.shot("backfill-started")
    assert f"{day:%Y-%m-%d} 00:00:00 - {day:%Y-%m-%d} 23:59:00" in banner.text

    runs = walk.server.api("GET", f"dags/{walk.backfill}/dagRuns?run_type=backfill")["dag_runs"]
    assert [(r["data_interval_start"], r["data_interval_end"]) for r in runs] == [
        (_iso(day), _iso(day + timedelta(days=1)))
    ]
    run_id = runs[0]["dag_run_id"]
    _wait_for_success(browser, walk, walk.backfill, run_id)

    rows = _see_run_succeeded(browser, walk, walk.backfill, run_id)
    chunk = f"chunk 1/1, 5 offsets: {walk.topic}[0]=[2,5) {walk.topic}[1]=[1,3)"
    assert rows == [
        ui.TaskRow("chunk.commit", chunk, "Success"),
        ui.TaskRow("chunk.write", chunk, "Success"),
        ui.TaskRow("plan", "", "Success"),
        ui.TaskRow("release", "", "Success"),
    ]
    backfills = [e for e in walk.epochs() if e[2] == run_id]
    assert backfills == [("backfill", "COMMITTED", run_id, [(0, 2, 5), (1, 1, 3)])]
    assert scan(walk.stack, walk.name) == hbase_rows(in_day(walk.records, day))
    walk.runs["dialog"] = run_id
    walk.done.add("dialog")


def test_epochs_page_shows_ranges_and_lag(browser: Browser, walk: Walk) -> None:
    walk.require("login", "stream", "form", "dialog")
    for partition, count in EXTRA_RECORDS.items():
        produce(walk.stack.kafka_bootstrap, walk.topic, [("late", "{}")] * count, partition=partition)
    t = walk.topic
    expected_epochs = [  # newest first, ranges exactly as printed
        (
            "backfill",
            "COMMITTED",
            walk.backfill,
            walk.runs["dialog"],
            (f"{t}[0] [2, 5)", f"{t}[1] [1, 3)"),
            5,
        ),
        ("backfill", "COMMITTED", walk.backfill, walk.runs["form"], (f"{t}[1] [1, 4)",), 3),
        ("stream", "COMMITTED", walk.stream, walk.runs["stream"], (f"{t}[0] [0, 6)", f"{t}[1] [0, 5)"), 11),
    ]
    expected_partitions = [
        epochs_page.PartitionCell(t, 0, "3", f"{t}[0] = 6 high 9 lag 3"),
        epochs_page.PartitionCell(t, 1, "1", f"{t}[1] = 5 high 6 lag 1"),
    ]

    def shown() -> tuple[list[Any], list[epochs_page.PartitionCell], str]:
        rows = [
            (r.kind, r.state, r.dag_id, r.run_id, r.ranges, r.records)
            for r in epochs_page.epoch_rows(browser)
            if r.pipeline == walk.name
        ]
        return (
            rows,
            epochs_page.partition_cells(browser, walk.name),
            epochs_page.total_lag(browser, walk.name),
        )

    # the navigation bar's Epochs entry, filtered on the pipeline through the page's form
    browser.open(walk.server.url + "/")
    browser.click(browser.by_xpath("//*[@data-testid='nav-sidebar']//a[normalize-space(.)='Epochs']"))
    epochs_page.enter_epochs_iframe(browser, "eo/")
    epochs_page.filter_pipeline(browser, walk.name)
    browser.shot("epochs-page")
    assert shown() == (expected_epochs, expected_partitions, "4")

    # the stream DAG's Epochs tab: the page preselects the pipeline
    browser.driver.switch_to.default_content()
    ui.open_dag(browser, walk.server.url, walk.stream)
    browser.click(browser.by_xpath("//a[normalize-space(.)='Epochs' and contains(@href, '/dags/')]"))
    epochs_page.enter_epochs_iframe(browser, f"dag_id={walk.stream}")
    browser.shot("dag-epochs-tab")
    assert shown() == (expected_epochs, expected_partitions, "4")
    walk.done.add("epochs")


def _stream_epoch(walk: Walk) -> int:
    """The id of the stream run's epoch."""
    (epoch_id,) = [
        e["epoch_id"] for e in raw_epochs(walk.stack.ledger_dsn, walk.name) if e["kind"] == "stream"
    ]
    return int(epoch_id)


def test_charts_draw_exactly_the_ledgers_rows(browser: Browser, walk: Walk) -> None:
    walk.require("login", "stream", "form", "dialog")
    browser.open(f"{walk.server.url}/plugin/eo-epochs/eo/?pipeline={walk.name}")  # deep link: the nav's view
    epochs_page.enter_epochs_iframe(browser, f"pipeline={walk.name}", ready="#charts")
    browser.shot("charts")
    epochs = raw_epochs(walk.stack.ledger_dsn, walk.name)
    samples = raw_samples(walk.stack.ledger_dsn, walk.name)
    stream = _stream_epoch(walk)
    assert [(e["kind"], e["records"], e["dead_letters"]) for e in epochs] == [
        ("stream", 11, 0), ("backfill", 3, 0), ("backfill", 5, 0)
    ]  # fmt: skip
    assert all(None not in e["phases"].values() for e in epochs)  # each phase recorded by the runs
    t = walk.topic  # the stream commit's sample: both partitions drained
    assert [(s["source"], s["epoch_id"], s["total_lag"], s["partitions"]) for s in samples] == [
        ("commit", stream, 0, [
            {"topic": t, "partition": 0, "cursor": 6, "high_watermark": 6, "lag": 0},
            {"topic": t, "partition": 1, "cursor": 5, "high_watermark": 5, "lag": 0},
        ]),
    ]  # fmt: skip
    assert epochs_page.chart_points(browser) == expected_points(epochs, samples)
    walk.done.add("charts")


def test_links_lead_from_an_epoch_to_airflow_and_back(browser: Browser, walk: Walk) -> None:
    """Four page loads of the UI: the Epochs page, the commit task's log, the epoch's page
    from the commit task's extra link, the run's grid (the write task's and a chunk's
    extra links are read through the REST API)."""
    walk.require("login", "stream", "epochs")
    url, stream, run_id, epoch_id = walk.server.url, walk.stream, walk.runs["stream"], _stream_epoch(walk)
    epoch_page = f"{url}/plugin/eo-epochs/eo/epochs/{epoch_id}"
    # the epoch's row on the Epochs page -> its own page (the address bar follows the iframe)
    browser.open(f"{url}/plugin/eo-epochs/eo/?pipeline={walk.name}")
    epochs_page.enter_epochs_iframe(browser, f"pipeline={walk.name}")
    epochs_page.open_epoch(browser, epoch_id)
    phases = browser.driver.find_elements(By.CSS_SELECTOR, "#phases tr.phase")
    assert [p.get_attribute("data-phase") for p in phases] == [
        "reserve", "wait_for_spark", "spark_tasks", "wait_for_commit", "commit", "total"
    ]  # fmt: skip
    ranges = [
        " ".join(r.text.split()) for r in browser.driver.find_elements(By.CSS_SELECTOR, "#ranges tr.range")
    ]
    # partition, start, end, offsets, records read, skipped, bad, high watermark and lag after the commit
    assert ranges == [f"{walk.topic} 0 0 6 6 6 0 0 6 0", f"{walk.topic} 1 0 5 5 5 0 0 5 0"]
    browser.driver.switch_to.default_content()
    browser.wait("the address bar to show the epoch's page", lambda: browser.url == epoch_page)
    browser.shot("epoch-page")
    # the epoch's page -> the log of the task that committed it, out of the iframe
    epochs_page.enter_epochs_iframe(browser, "eo/", ready="h1#epoch")
    browser.click(browser.by_xpath("//a[contains(@class, 'commit-log')]"))
    browser.driver.switch_to.default_content()
    commit_task = f"{url}/dags/{stream}/runs/{quote(run_id, safe='')}/tasks/commit"
    browser.wait("the commit task's log", lambda: browser.url == f"{commit_task}?try_number=1", 60)
    body = browser.element("body")
    browser.wait(
        "the commit in its log", lambda: f"COMMITTED epoch_id={epoch_id}" in browser.text_of(body), 60
    )
    browser.shot("commit-log")
    # the commit task's "Epoch" extra link (its Details tab) -> the epoch's page in the UI
    browser.click(browser.by_xpath("//a[normalize-space(.)='Details']"))  # the task's Details tab
    link = ui.extra_link(browser, "Epoch")
    assert link.get_attribute("href") == epoch_page_in_airflow(url, epoch_id) == epoch_page
    browser.shot("commit-extra-link")
    browser.click(link)
    browser.wait("the epoch's page from the extra link", lambda: browser.url == epoch_page)
    epochs_page.enter_epochs_iframe(browser, f"epochs/{epoch_id}", ready="h1#epoch")
    assert browser.element("h1#epoch").text.split()[:2] == ["Epoch", str(epoch_id)]
    # the epoch's page -> its run in Airflow (the grid)
    browser.click(browser.by_xpath("//a[@class='run-link']"))
    browser.driver.switch_to.default_content()
    browser.wait("the run's page", lambda: ui.run_id_from_url(browser, stream) == run_id, 60)
    browser.wait(
        f"run {run_id} to show Success", lambda: ui.run_header_state(browser, run_id) == "Success", 60
    )
    browser.shot("epoch-run-grid")
    # the write task's link and a backfill chunk's commit (mapped) lead to their epochs too
    links = "dags/{dag}/dagRuns/{run}/taskInstances/{task}/links"
    write = walk.server.api("GET", links.format(dag=stream, run=run_id, task="write"))
    assert write["extra_links"] == {"Epoch": epoch_page}
    (form_epoch,) = [e["epoch_id"] for e in raw_epochs(walk.stack.ledger_dsn, walk.name) if e["records"] == 3]
    chunk_commit = (
        links.format(dag=walk.backfill, run=walk.runs["form"], task="chunk.commit") + "?map_index=0"
    )
    assert walk.server.api("GET", chunk_commit)["extra_links"] == {
        "Epoch": epoch_page_in_airflow(url, form_epoch)
    }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
