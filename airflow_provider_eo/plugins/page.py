"""The self-contained HTML page of the UI plugin (no scripts, no external assets).

:func:`render_page` turns the JSON views of :mod:`.views` into one HTML document.
Every value taken from the ledger (pipeline and topic names, run ids, errors, metrics)
goes through :func:`html.escape`; links carry URL-encoded query strings. Filtering is
a plain GET form, so the page works inside the Airflow UI's sandboxed iframe.
An epoch of a registry format shows the schema ids its records carried above its metrics.
Under each epoch's row, a ``tr.history`` row holds its history (a closed ``<details>``:
every transition, oldest first, with time, actor and reason).
Each pipeline lists its partitions with cursor, high watermark and lag (``unknown``
when Kafka could not be read, with the reason in a banner; a partition whose topic is
gone is ``unknown`` with the reason under the pipeline's partitions).
"""

from __future__ import annotations

import json
from html import escape
from typing import Any
from urllib.parse import urlencode

from airflow_provider_eo.ledger.states import EpochKind, EpochState
from airflow_provider_eo.ledger.store.epoch_rows import EpochFilter

STATES = tuple(state.value for state in EpochState)
KINDS = tuple(kind.value for kind in EpochKind)

_CSS = """
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#1a202c;background:#fff}
h1{font-size:18px;margin:0 0 8px}h2{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #e2e8f0;padding:4px 6px;
text-align:left;vertical-align:top}th{background:#f7fafc;font-weight:600}
code{font:12px ui-monospace,monospace}.nw{white-space:nowrap}.muted{color:#718096}.err{color:#c53030}
.banner{border:1px solid #c53030;background:#fff5f5;padding:8px;margin:8px 0}
form{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin:6px 0}
.s{padding:1px 6px;border-radius:8px;font-size:11px;font-weight:600;color:#fff}
.s-RESERVED{background:#d69e2e}.s-WRITTEN{background:#3182ce}
.s-COMMITTED{background:#38a169}.s-ABORTED{background:#a0aec0}.lag{font-weight:600}
tr.history td{border-bottom:1px solid #e2e8f0;padding-top:0}ol.transitions{margin:2px 0;padding-left:20px}
@media (prefers-color-scheme:dark){body{background:#1a202c;color:#e2e8f0}
th{background:#2d3748}th,td{border-color:#4a5568}.banner{background:#3b1f1f}}
"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _options(values: tuple[str, ...] | list[str], selected: str | None, any_label: str) -> str:
    items = [f'<option value=""{"" if selected else " selected"}>{_e(any_label)}</option>']
    for value in values:
        mark = " selected" if value == selected else ""
        items.append(f'<option value="{_e(value)}"{mark}>{_e(value)}</option>')
    return "".join(items)


def _state(state: str) -> str:
    return f'<span class="s s-{_e(state)}">{_e(state)}</span>'


def _ranges(ranges: list[dict[str, Any]]) -> str:
    lines = [
        f'<span class="nw"><code>{_e(r["topic"])}[{_e(r["partition"])}] [{_e(r["start"])}, {_e(r["end"])})'
        f'</code> <span class="muted">{_e(r["records"])}</span></span>'
        for r in ranges
    ]
    return "<br>".join(lines) or '<span class="muted">none</span>'


def _lag(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def _partition(c: dict[str, Any]) -> str:
    """One partition: ``topic[p] = cursor``, its high watermark and lag (data-* for scripts)."""
    return (
        f'<span class="partition nw" data-topic="{_e(c["topic"])}" data-partition="{_e(c["partition"])}" '
        f'data-lag="{_e(_lag(c["lag"]))}"><code>{_e(c["topic"])}[{_e(c["partition"])}] = {_e(c["cursor"])}'
        f'</code> <span class="muted">high {_e(_lag(c["high_watermark"]))}</span> '
        f'lag <span class="lag">{_e(_lag(c["lag"]))}</span></span>'
    )


def _pipeline_row(p: dict[str, Any], banner_error: str | None) -> str:
    counts = " ".join(f"{_state(s)}&nbsp;{_e(n)}" for s, n in p["epochs"].items())
    open_epochs = "<br>".join(
        f"#{_e(o['epoch_id'])} {_e(o['kind'])} {_state(o['state'])} <code>{_e(o['run_id'])}</code>"
        for o in p["open_epochs"]
    )
    partitions = "<br>".join(_partition(c) for c in p["cursors"])
    if p["lag_error"] and p["lag_error"] != banner_error:  # e.g. a topic gone from Kafka
        partitions += f'<br><span class="err lag-error">{_e(p["lag_error"])}</span>'
    link = "?" + urlencode({"pipeline": p["name"]})
    return (
        f'<tr class="pipeline"><td><a href="{_e(link)}">{_e(p["name"])}</a></td><td>{counts}</td>'
        f"<td>{open_epochs or '<span class=muted>none</span>'}</td><td>{partitions}</td>"
        f'<td class="lag total-lag">{_e(_lag(p["total_lag"]))}</td>'
        f"<td>{_e(p['dead_letters'])}</td><td>{_e(len(p['gaps']))}</td></tr>"
    )


def _schema_ids(metrics: dict[str, Any] | None) -> str:
    """The schema ids the epoch's records carried (registry formats), above its metrics."""
    ids = (metrics or {}).get("schema_ids") or []
    if not ids:
        return ""
    listed = ",".join(map(str, ids))
    text = ", ".join(map(str, ids))
    return f'<div class="schema-ids nw" data-schema-ids="{_e(listed)}">schema ids {_e(text)}</div>'


def _epoch_row(e: dict[str, Any]) -> str:
    metrics = "" if e["metrics"] is None else json.dumps(e["metrics"], sort_keys=True)
    when = e["committed_at"] or e["aborted_at"] or e["written_at"] or e["created_at"]
    return (
        f'<tr class="epoch" id="epoch-{_e(e["epoch_id"])}"><td>{_e(e["epoch_id"])}</td>'
        f"<td>{_e(e['pipeline'])}</td><td>{_e(e['kind'])}</td><td>{_state(e['state'])}</td>"
        f"<td><code>{_e(e['dag_id'])}</code><br><code>{_e(e['run_id'])}</code></td>"
        f"<td>{_ranges(e['ranges'])}</td><td>{_e(e['records_total'])}</td>"
        f"<td>{_schema_ids(e['metrics'])}<code>{_e(metrics)}</code></td>"
        f'<td class="muted nw" title="{_e(when)}">{_e(when[:19].replace("T", " "))}</td>'
        f'<td class="err">{_e(e["error"])}</td></tr>'
    )


def _history_row(epoch_id: Any, history: list[dict[str, Any]] | None) -> str:
    """The epoch's history under its row: one ``li.transition`` per state change (data-*
    for scripts), oldest first, inside a closed ``<details>``."""
    if history is None:
        return ""
    items = "".join(
        f'<li class="transition" data-from="{_e(t["from"])}" data-to="{_e(t["to"])}">'
        f'<span class="muted nw" title="{_e(t["at"])}">{_e(t["at"][:19].replace("T", " "))}</span> '
        f"{_state(t['from']) if t['from'] else '<span class=muted>created</span>'} &rarr; {_state(t['to'])} "
        f'by <span class="actor">{_e(t["actor_kind"])} <code>{_e(t["actor"])}</code></span>: '
        f'<span class="reason">{_e(t["reason"])}</span></li>'
        for t in history
    )
    return (
        f'<tr class="history" id="history-{_e(epoch_id)}"><td></td><td colspan="9"><details>'
        f"<summary>History ({len(history)})</summary>"
        f'<ol class="transitions">{items}</ol></details></td></tr>'
    )


def render_page(
    *,
    pipeline_names: list[str],
    pipelines: list[dict[str, Any]],
    epochs: list[dict[str, Any]],
    selected: EpochFilter,
    histories: dict[int, list[dict[str, Any]]] | None = None,
    error: str | None = None,
    lag_error: str | None = None,
) -> str:
    """The whole HTML document.

    ``pipelines`` / ``epochs`` are :mod:`.views` answers (epochs oldest first: shown newest
    first); ``selected`` is the current filter (its ``pipeline``, ``state``, ``kind`` and
    ``limit`` are shown in the form); ``histories`` (epoch id -> its transitions,
    ``Transition.to_json``) adds a history row under each epoch; ``error`` (e.g. the
    ledger is unreachable) and ``lag_error`` (why lag is unknown) are shown as banners.
    """
    form = (
        '<form method="get" action="">'
        f'<label>Pipeline <select name="pipeline">'
        f"{_options(pipeline_names, selected.pipeline, 'all')}</select></label>"
        f'<label>State <select name="state">{_options(STATES, selected.state, "any")}</select></label>'
        f'<label>Kind <select name="kind">{_options(KINDS, selected.kind, "any")}</select></label>'
        f'<label>Last <input name="limit" type="number" min="1" max="1000" size="5" '
        f'value="{_e(selected.limit)}"></label><button type="submit">Show</button></form>'
    )
    banner = f'<div class="banner err">{_e(error)}</div>' if error else ""
    if lag_error:
        banner += f'<div class="banner err" id="lag-error">Lag unknown: {_e(lag_error)}</div>'
    pipeline_rows = "".join(_pipeline_row(p, lag_error) for p in pipelines)
    known = histories or {}
    epoch_rows = "".join(
        _epoch_row(e) + _history_row(e["epoch_id"], known.get(e["epoch_id"])) for e in reversed(epochs)
    )
    empty = '<tr><td colspan="10" class="muted">no epochs</td></tr>'
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Epochs</title><style>{_CSS}</style></head><body>"
        f'<h1>Epoch ledger</h1>{form}{banner}<h2>Pipelines</h2><table id="pipelines">'
        "<tr><th>Pipeline</th><th>Epochs</th><th>Open epochs</th>"
        "<th>Partitions: cursor (next offset), high watermark, lag</th><th>Total lag</th>"
        f"<th>Dead letters</th><th>Gaps</th></tr>{pipeline_rows}</table>"
        f'<h2>Recent epochs <span class="muted">(newest first)</span></h2><table id="epochs">'
        "<tr><th>Epoch</th><th>Pipeline</th><th>Kind</th><th>State</th><th>DAG / run</th>"
        "<th>Ranges [start, end) records</th><th>Records</th><th>Metrics</th><th>Last change</th>"
        f"<th>Error</th></tr>{epoch_rows or empty}</table>"
        '<p class="muted">JSON: <a href="api/pipelines">api/pipelines</a>, '
        '<a href="api/epochs">api/epochs</a></p></body></html>'
    )
