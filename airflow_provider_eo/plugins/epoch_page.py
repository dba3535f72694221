"""An epoch's own page (``/eo/epochs/{id}``): what the ledger holds about it, readable.

Its facts (its newest kept audit among them, as the Epochs page's badge), where its time
went (``ledger/model/phases.py``: a phase it did not record reads "unknown"), its ranges
with the vote's per-partition counts and the lag right after its commit, its metrics as a
table of named figures, its history. Links lead back to the Epochs page (the same iframe)
and into Airflow (``target="_top"``, :mod:`.html_parts`): the run (its grid) and the task
instances that wrote and committed it (those its history names, with their try;
otherwise the run's ``write``/``commit`` tasks). Rows carry
``data-*`` attributes for scripts and the browser tests.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from airflow_provider_eo import ui_links
from airflow_provider_eo.dag_ids import CHUNK_GROUP_ID
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.phases import PHASE_LABELS
from airflow_provider_eo.plugins.html_parts import (
    audit_badge,
    document,
    error_page,
    esc,
    state_badge,
    top_link,
    when,
)
from airflow_provider_eo.plugins.svg_plot import number

UI_ROOT = "../../"
"""Airflow's UI root, relative to ``/eo/epochs/<id>``."""
METRIC_NAMES = {
    "records": "records read",
    "skipped_offsets": "offsets without a record (markers, aborted, compacted)",
    "bad_records": "bad records (dead-lettered)",
    "cells_written": "HBase cells written",
    "tombstones": "tombstones written",
    "changes_skipped": "change events skipped (tombstones after deletes, ignored truncates)",
    "bytes": "bytes read (keys and values)",
    "segments": "write segments (mutateRowsTs calls)",
    "schema_fetches": "Schema Registry requests",
    "schema_ids": "schema ids seen",
    "tasks": "Spark tasks",
    "duration_s": "write step, s (SparkContext to vote)",
    "spark_tasks_s": "Spark job, s (tasks' submission to last result)",
    "vote_after_tasks_s": "Spark job's end to the vote, s",
}


def _task_href(dag_id: str, run_id: str, task_id: str, tried: int | None) -> str:
    """A task instance's page: a chunk task's is the list of the chunk's mapped instances
    (which chunk wrote the epoch is not recorded), any other's is that try's log."""
    mapped = task_id.startswith(f"{CHUNK_GROUP_ID}.")
    try_number = None if mapped else tried
    return UI_ROOT + ui_links.airflow_task(dag_id, run_id, task_id, mapped=mapped, try_number=try_number)


def _task_link(actor: Actor | None, dag_id: str, run_id: str, task: str, step: str) -> str:
    """The task instance ``actor`` names (with its try), else ``task`` of the epoch's run."""
    found = actor.task_instance() if actor is not None else None
    dag, run, task_id, tried = found or (dag_id, run_id, task, None)
    label = f"{step} log" + (f" (try {tried})" if tried is not None else "")
    return top_link(_task_href(dag, run, task_id, tried), esc(label), f"task-link {step}-log")


def _actor_of(history: list[dict[str, Any]], to_state: str) -> Actor | None:
    for t in history:
        if t["to"] == to_state:
            return Actor(t["actor_kind"], t["actor"])
    return None


def _links(e: dict[str, Any]) -> str:
    group = f"{CHUNK_GROUP_ID}." if e["kind"] == "backfill" else ""
    dag_id, run_id, history = e["dag_id"], e["run_id"], e["history"]
    back = "../?" + urlencode({"pipeline": e["pipeline"]})
    run = UI_ROOT + ui_links.airflow_run(dag_id, run_id)
    return (
        f'<div class="links"><a class="back" href="{esc(back)}">&larr; Epochs of {esc(e["pipeline"])}</a>'
        f"{top_link(run, 'Airflow run (grid)', 'run-link')}"
        f"{_task_link(_actor_of(history, 'WRITTEN'), dag_id, run_id, f'{group}write', 'write')}"
        f"{_task_link(_actor_of(history, 'COMMITTED'), dag_id, run_id, f'{group}commit', 'commit')}"
        f'<a href="../api/epochs/{esc(e["epoch_id"])}">JSON</a></div>'
    )


def _mapping(digest: str | None) -> str:
    """The mapping digest's first 12 hex digits, linked to the recorded spec."""
    if not digest:
        return "not recorded"
    return f'<a href="../api/specs/{esc(digest)}"><code>{esc(digest[:12])}</code></a>'


def _audit(audit: dict[str, Any] | None) -> str:
    """The epoch's newest kept audit as its badge, linked to the audit's page."""
    return audit_badge(audit, "../" + ui_links.audit_page(audit["audit_id"]) if audit else "")


def _facts(e: dict[str, Any]) -> str:
    rows = [
        ("pipeline", esc(e["pipeline"])), ("kind", esc(e["kind"])), ("state", state_badge(e["state"])),
        ("DAG", f"<code>{esc(e['dag_id'])}</code>"), ("run", f"<code>{esc(e['run_id'])}</code>"),
        ("mapping", _mapping(e.get("spec_digest"))),
        ("offsets", esc(e["records_total"])), ("reserved", when(e["created_at"])),
        ("written", when(e["written_at"])), ("committed", when(e["committed_at"])),
        ("aborted", when(e["aborted_at"])),
        ("error", f'<span class="err">{esc(e["error"])}</span>' if e["error"] else "-"),
        ("audit", _audit(e.get("audit"))),
    ]  # fmt: skip
    body = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    return f'<table class="facts" id="facts">{body}</table>'


def _seconds(value: float | None) -> str:
    return "unknown" if value is None else number(value)


def _phases(e: dict[str, Any]) -> str:
    total = e["duration_s"]
    rows = []
    for phase, seconds in [*e["phases"].items(), ("total", total)]:
        share = f"{seconds / total:.0%}" if seconds is not None and total and phase != "total" else ""
        name = PHASE_LABELS.get(phase, "reservation to commit")
        value = "unknown" if seconds is None else seconds
        rows.append(
            f'<tr class="phase" data-phase="{phase}" data-value="{esc(value)}"><th>{esc(name)}</th>'
            f'<td class="num">{esc(_seconds(seconds))}</td><td class="num">{share}</td></tr>'
        )
    head = '<tr><th>phase</th><th class="num">seconds</th><th class="num">share</th></tr>'
    return f'<table class="facts" id="phases">{head}{"".join(rows)}</table>'


def _ranges(e: dict[str, Any]) -> str:
    counts = {(p["topic"], p["partition"]): p for p in (e["metrics"] or {}).get("partitions", [])}
    lag = e["lag_after_commit"]
    lags = {(p["topic"], p["partition"]): p for p in (lag["partitions"] if lag else [])}
    rows = []
    for r in e["ranges"]:
        tp = (r["topic"], r["partition"])
        voted, after = counts.get(tp, {}), lags.get(tp, {})
        cells = [r["start"], r["end"], r["records"], voted.get("records"), voted.get("skipped_offsets"),
                 voted.get("bad_records"), after.get("high_watermark"), after.get("lag")]  # fmt: skip
        rows.append(
            f'<tr class="range" data-topic="{esc(r["topic"])}" data-partition="{esc(r["partition"])}">'
            f'<td><code>{esc(r["topic"])}</code></td><td class="num">{esc(r["partition"])}</td>'
            + "".join(f'<td class="num">{"-" if c is None else esc(c)}</td>' for c in cells)
            + "</tr>"
        )
    sampled = f" (lag sampled {when(lag['at'])})" if lag else ""
    heads = ["partition", "start", "end", "offsets", "records read", "skipped", "bad",
             "high watermark after commit", "lag after commit"]  # fmt: skip
    head = "<tr><th>topic</th>" + "".join(f'<th class="num">{h}</th>' for h in heads) + "</tr>"
    return (
        f'<h2>Ranges <span class="muted">[start, end){sampled}</span></h2>'
        f'<table id="ranges">{head}{"".join(rows)}</table>'
    )


def _metrics(metrics: dict[str, Any] | None) -> str:
    if not metrics:
        return '<p class="muted" id="metrics">no metrics: the epoch was not voted</p>'
    rows = []
    named = [key for key in METRIC_NAMES if key in metrics]  # the names' order, then any other key
    for key in named + sorted(set(metrics) - set(named) - {"partitions"}):
        value = metrics[key]
        shown = ", ".join(map(str, value)) if isinstance(value, list) else value
        figure = number(shown) if isinstance(shown, int | float) else shown
        rows.append(
            f'<tr class="metric" data-key="{esc(key)}" data-value="{esc(shown)}">'
            f'<th>{esc(METRIC_NAMES.get(key, key))}</th><td class="num">{esc(figure)}</td>'
            f'<td class="muted"><code>{esc(key)}</code></td></tr>'
        )
    return f'<table class="facts" id="metrics">{"".join(rows)}</table>'


def _history(e: dict[str, Any]) -> str:
    rows = []
    for t in e["history"]:
        actor = Actor(t["actor_kind"], t["actor"])
        who = f"<code>{esc(t['actor'])}</code>"
        found = actor.task_instance()
        if found is not None:
            who = top_link(_task_href(*found), who, "actor-link")
        before = state_badge(t["from"]) if t["from"] else '<span class="muted">created</span>'
        rows.append(
            f'<tr class="transition" data-from="{esc(t["from"])}" data-to="{esc(t["to"])}">'
            f"<td>{when(t['at'])}</td>"
            f"<td>{before} &rarr; {state_badge(t['to'])}</td><td>{esc(t['actor_kind'])} {who}</td>"
            f'<td class="reason">{esc(t["reason"])}</td></tr>'
        )
    head = "<tr><th>at</th><th>change</th><th>by</th><th>reason</th></tr>"
    return f'<table id="history">{head}{"".join(rows)}</table>'


def render_epoch_page(e: dict[str, Any]) -> str:
    """The page of one epoch (``views.epoch_page_data``)."""
    return document(
        f"Epoch {e['epoch_id']}",
        f'<h1 id="epoch" data-epoch-id="{esc(e["epoch_id"])}">Epoch {esc(e["epoch_id"])} '
        f"{state_badge(e['state'])}</h1>"
        f"{_links(e)}{_facts(e)}<h2>Where the time went</h2>{_phases(e)}{_ranges(e)}"
        f'<h2>Metrics <span class="muted">(the write step\'s vote)</span></h2>{_metrics(e["metrics"])}'
        f"<h2>History</h2>{_history(e)}",
    )


def render_missing(message: str) -> str:
    """The page for an epoch that does not exist (or that the caller may not see)."""
    return error_page("Epoch not found", message, back_href="../")
