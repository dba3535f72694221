"""The Epochs page of the UI plugin: server-rendered HTML, no external asset.

:func:`render_page` turns the JSON views of :mod:`.views` into one HTML document.
Every value taken from the ledger (pipeline and topic names, run ids, errors, metrics)
goes through :func:`html.escape`; links carry URL-encoded query strings. Filtering is
a plain GET form, so the page works inside the Airflow UI's sandboxed iframe.
With a pipeline selected, its charts come first (:mod:`.charts`, over the form's window).
Each epoch's id links to its own page (:mod:`.epoch_page`), its run id to the run in
Airflow. Its metrics are summed up in a few figures (all of them: its page).
An epoch of a registry format shows the schema ids its records carried above its metrics.
Each epoch's last cell is its newest kept audit as a badge linking to the audit's page
(:func:`~.html_parts.audit_badge`; ``-`` when never audited).
Under each epoch's row, a ``tr.history`` row holds its history (a closed ``<details>``:
every transition, oldest first, with time, actor and reason).
Each pipeline lists its partitions with cursor, high watermark and lag (``unknown``
when Kafka could not be read, with the reason in a banner; a partition whose topic is
gone is ``unknown`` with the reason under the pipeline's partitions).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from airflow_provider_eo import ui_links
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.plugins.chart_window import THE_DEFAULT, WINDOW_CHOICES, ChartWindow
from airflow_provider_eo.plugins.charts import render_charts
from airflow_provider_eo.plugins.html_parts import (
    audit_badge,
    document,
    esc,
    ranges_cell,
    state_badge,
    top_link,
)

STATES = tuple(state.value for state in EpochState)
KINDS = tuple(kind.value for kind in EpochKind)
#: The vote's figures an epoch's row shows (every metric: the epoch's page).
BRIEF_METRICS = (
    ("records", "records"),
    ("cells_written", "cells"),
    ("bad_records", "bad"),
    ("duration_s", "s"),
)


def _options(values: tuple[str, ...] | list[str], selected: str | None, any_label: str) -> str:
    items = [f'<option value=""{"" if selected else " selected"}>{esc(any_label)}</option>']
    for value in values:
        mark = " selected" if value == selected else ""
        items.append(f'<option value="{esc(value)}"{mark}>{esc(value)}</option>')
    return "".join(items)


def _window_options(selected: str) -> str:
    choices = list(WINDOW_CHOICES)
    if selected not in dict(choices):
        choices.append((selected, ChartWindow.parse(selected).label))
    return "".join(
        f'<option value="{esc(value)}"{" selected" if value == selected else ""}>{esc(label)}</option>'
        for value, label in choices
    )


def _lag(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def _partition(c: dict[str, Any]) -> str:
    """One partition: ``topic[p] = cursor``, its high watermark and lag (data-* for scripts)."""
    return (
        f'<span class="partition nw" data-topic="{esc(c["topic"])}" data-partition="{esc(c["partition"])}" '
        f'data-lag="{esc(_lag(c["lag"]))}"><code>{esc(c["topic"])}[{esc(c["partition"])}] = '
        f'{esc(c["cursor"])}</code> <span class="muted">high {esc(_lag(c["high_watermark"]))}</span> '
        f'lag <span class="lag">{esc(_lag(c["lag"]))}</span></span>'
    )


def _pipeline_row(p: dict[str, Any], banner_error: str | None) -> str:
    counts = " ".join(f"{state_badge(s)}&nbsp;{esc(n)}" for s, n in p["epochs"].items())
    open_epochs = "<br>".join(
        f"#{esc(o['epoch_id'])} {esc(o['kind'])} {state_badge(o['state'])} <code>{esc(o['run_id'])}</code>"
        for o in p["open_epochs"]
    )
    partitions = "<br>".join(_partition(c) for c in p["cursors"])
    if p["lag_error"] and p["lag_error"] != banner_error:  # e.g. a topic gone from Kafka
        partitions += f'<br><span class="err lag-error">{esc(p["lag_error"])}</span>'
    link = "?" + urlencode({"pipeline": p["name"]})
    return (
        f'<tr class="pipeline"><td><a href="{esc(link)}">{esc(p["name"])}</a></td><td>{counts}</td>'
        f"<td>{open_epochs or '<span class=muted>none</span>'}</td><td>{partitions}</td>"
        f'<td class="lag total-lag">{esc(_lag(p["total_lag"]))}</td>'
        f"<td>{esc(p['dead_letters'])}</td><td>{esc(len(p['gaps']))}</td></tr>"
    )


def _schema_ids(metrics: dict[str, Any] | None) -> str:
    """The schema ids the epoch's records carried (registry formats), above its metrics."""
    ids = (metrics or {}).get("schema_ids") or []
    if not ids:
        return ""
    listed = ",".join(map(str, ids))
    text = ", ".join(map(str, ids))
    return f'<div class="schema-ids nw" data-schema-ids="{esc(listed)}">schema ids {esc(text)}</div>'


def metrics_brief(metrics: dict[str, Any] | None) -> str:
    """A few of the vote's figures (:data:`BRIEF_METRICS`, those present), e.g.
    ``records 11 · cells 22 · bad 0 · 3.2 s``; empty before the vote."""
    found = metrics or {}
    parts = [
        f"{found[key]} {label}" if label == "s" else f"{label} {found[key]}"
        for key, label in BRIEF_METRICS
        if isinstance(found.get(key), int | float)
    ]
    return " · ".join(parts)


def _epoch_row(e: dict[str, Any], audit: dict[str, Any] | None) -> str:
    last = e["committed_at"] or e["aborted_at"] or e["written_at"] or e["created_at"]
    run_page = "../" + ui_links.airflow_run(e["dag_id"], e["run_id"])
    run = top_link(run_page, f"<code>{esc(e['run_id'])}</code>", "run-link")
    badge = audit_badge(audit, ui_links.audit_page(audit["audit_id"]) if audit else "")
    return (
        f'<tr class="epoch" id="epoch-{esc(e["epoch_id"])}">'
        f'<td><a class="epoch-link" href="{ui_links.epoch_page(e["epoch_id"])}">{esc(e["epoch_id"])}</a></td>'
        f"<td>{esc(e['pipeline'])}</td><td>{esc(e['kind'])}</td><td>{state_badge(e['state'])}</td>"
        f"<td><code>{esc(e['dag_id'])}</code><br>{run}</td>"
        f"<td>{ranges_cell(e['ranges'])}</td><td>{esc(e['records_total'])}</td>"
        f'<td>{_schema_ids(e["metrics"])}<span class="metrics">{esc(metrics_brief(e["metrics"]))}</span></td>'
        f'<td class="muted nw" title="{esc(last)}">{esc(last[:19].replace("T", " "))}</td>'
        f'<td class="err">{esc(e["error"])}</td>'
        f'<td class="audit-cell">{badge}</td></tr>'
    )


def _history_row(epoch_id: Any, history: list[dict[str, Any]] | None) -> str:
    """The epoch's history under its row: one ``li.transition`` per state change (data-*
    for scripts), oldest first, inside a closed ``<details>``."""
    if history is None:
        return ""
    items = "".join(
        f'<li class="transition" data-from="{esc(t["from"])}" data-to="{esc(t["to"])}">'
        f'<span class="muted nw" title="{esc(t["at"])}">{esc(t["at"][:19].replace("T", " "))}</span> '
        f"{state_badge(t['from']) if t['from'] else '<span class=muted>created</span>'} &rarr; "
        f"{state_badge(t['to'])} "
        f'by <span class="actor">{esc(t["actor_kind"])} <code>{esc(t["actor"])}</code></span>: '
        f'<span class="reason">{esc(t["reason"])}</span></li>'
        for t in history
    )
    return (
        f'<tr class="history" id="history-{esc(epoch_id)}"><td></td><td colspan="10"><details>'
        f"<summary>History ({len(history)})</summary>"
        f'<ol class="transitions">{items}</ol></details></td></tr>'
    )


def render_page(
    *,
    pipeline_names: list[str],
    pipelines: list[dict[str, Any]],
    epochs: list[dict[str, Any]],
    selected: EpochFilter,
    window: ChartWindow = THE_DEFAULT,
    charts: dict[str, Any] | None = None,
    histories: dict[int, list[dict[str, Any]]] | None = None,
    audits: dict[int, dict[str, Any]] | None = None,
    error: str | None = None,
    lag_error: str | None = None,
) -> str:
    """The whole HTML document.

    ``pipelines`` / ``epochs`` are :mod:`.views` answers (epochs oldest first: shown newest
    first); ``selected`` is the current filter and ``window`` the charts' (both shown in
    the form); ``charts`` (:mod:`.chart_views`, the selected pipeline's) adds its charts;
    ``histories`` (epoch id -> its transitions, ``Transition.to_json``) adds a history row
    under each epoch; ``audits`` (epoch id -> its newest audit, ``EpochAudit.to_json``)
    fills each epoch's audit badge; ``error`` (e.g. the ledger is unreachable) and
    ``lag_error`` (why lag is unknown) are shown as banners.
    """
    form = (
        '<form method="get" action="">'
        f'<label>Pipeline <select name="pipeline">'
        f"{_options(pipeline_names, selected.pipeline, 'all')}</select></label>"
        f'<label>State <select name="state">{_options(STATES, selected.state, "any")}</select></label>'
        f'<label>Kind <select name="kind">{_options(KINDS, selected.kind, "any")}</select></label>'
        f'<label>Last <input name="limit" type="number" min="1" max="1000" size="5" '
        f'value="{esc(selected.limit)}"></label>'
        f'<label>Charts <select name="window">{_window_options(window.text)}</select></label>'
        '<button type="submit">Show</button></form>'
    )
    banner = f'<div class="banner err">{esc(error)}</div>' if error else ""
    if lag_error:
        banner += f'<div class="banner err" id="lag-error">Lag unknown: {esc(lag_error)}</div>'
    pipeline_rows = "".join(_pipeline_row(p, lag_error) for p in pipelines)
    known, audited = histories or {}, audits or {}
    epoch_rows = "".join(
        _epoch_row(e, audited.get(e["epoch_id"])) + _history_row(e["epoch_id"], known.get(e["epoch_id"]))
        for e in reversed(epochs)
    )
    empty = '<tr><td colspan="11" class="muted">no epochs</td></tr>'
    if charts is not None:
        chart_section = render_charts(charts, window.label)
    else:
        chart_section = '<p class="muted" id="charts-hint">Choose a pipeline to see its charts.</p>'
    return document(
        "Epochs",
        f'<h1>Epoch ledger</h1>{form}{banner}<h2>Pipelines</h2><table id="pipelines">'
        "<tr><th>Pipeline</th><th>Epochs</th><th>Open epochs</th>"
        "<th>Partitions: cursor (next offset), high watermark, lag</th><th>Total lag</th>"
        f"<th>Dead letters</th><th>Gaps</th></tr>{pipeline_rows}</table>{chart_section}"
        f'<h2>Recent epochs <span class="muted">(newest first)</span></h2><table id="epochs">'
        "<tr><th>Epoch</th><th>Pipeline</th><th>Kind</th><th>State</th><th>DAG / run</th>"
        "<th>Ranges [start, end) records</th><th>Records</th><th>Metrics</th><th>Last change</th>"
        f"<th>Error</th><th>Audit</th></tr>{epoch_rows or empty}</table>"
        '<p class="muted">JSON: <a href="api/pipelines">api/pipelines</a>, '
        '<a href="api/epochs">api/epochs</a></p>',
    )
