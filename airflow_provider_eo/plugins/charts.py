"""The Epochs page's charts of one pipeline, as inline SVG drawn from the charts JSON
(:mod:`.chart_views`, the same answer ``GET /api/pipelines/{name}/charts`` gives):

* lag over time: the total and each shown partition, one point per lag sample;
* records per epoch, and records per second of each epoch's Spark job;
* each epoch's duration, stacked by phase (``ledger/model/phases.py``; what an epoch did not
  record is a hatched "unknown" part, never zero);
* dead letters per epoch.

Every data point is an element of class ``point`` carrying its values in ``data-*``
attributes (``data-chart``, ``data-epoch-id`` or ``data-sample-id``, ``data-time``,
``data-value``, and per chart ``data-series``/``data-topic``/``data-partition``/
``data-cursor``/``data-high-watermark``/``data-source`` or ``data-phase``), so scripts and
the browser tests read exactly what is drawn; a ``<title>`` makes it a hover tooltip.
A chart showing less than its window says so in its caption.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from airflow_provider_eo.ledger.model.phases import PHASE_LABELS, PHASES
from airflow_provider_eo.plugins.svg_plot import (
    HATCH_ID,
    PALETTE,
    Plot,
    attributes,
    axes,
    esc,
    number,
    polyline,
    svg,
    time_labels,
    time_share,
)

PHASE_COLORS = {
    "reserve": "#d69e2e",
    "wait_for_spark": "#a0aec0",
    "spark_tasks": "#3182ce",
    "wait_for_commit": "#718096",
    "commit": "#38a169",
}
UNKNOWN = f"url(#{HATCH_ID})"


def _figure(chart: str, title: str, notes: list[str], body: str, legend: list[tuple[str, str]]) -> str:
    note = "".join(f' <span class="note">{esc(n)}</span>' for n in notes)
    keys = "".join(
        f'<span class="key"><span class="swatch hatch"></span>{esc(name)}</span>'
        if color == UNKNOWN
        else f'<span class="key"><span class="swatch" style="background:{color}"></span>{esc(name)}</span>'
        for name, color in legend
    )
    return (
        f'<figure class="chart" id="chart-{chart}" data-chart="{chart}"><figcaption><b>{esc(title)}</b>'
        f'{note}</figcaption>{body}<div class="legend">{keys}</div></figure>'
    )


def _epoch_axes(plot: Plot, epochs: list[dict[str, Any]], y_title: str) -> str:
    count = len(epochs)
    marks = sorted({0, count // 2, count - 1}) if count else []
    labels = [(plot.band_center(i, count), f"#{epochs[i]['epoch_id']}") for i in marks]
    return axes(plot, y_title, labels, "epoch (oldest to newest)")


def _epoch_notes(data: dict[str, Any]) -> list[str]:
    shown, held = len(data["epochs"]), data["epochs_in_window"]
    if not shown:
        return ["no committed epoch in this window"]
    return [f"newest {shown} of {held} epochs"] if held > shown else []


def lag_chart(data: dict[str, Any]) -> str:
    """Lag over time: ``total`` and one series per shown partition (commit samples filled,
    wait samples hollow)."""
    lag = data["lag"]
    samples, end = lag["samples"], _time(data["until"])
    start = _time(samples[0]["at"]) if samples else _time(data["since"])  # the window's samples, not its void
    notes = [] if samples else ["no lag sample in this window"]
    if lag["every"] > 1:
        notes.append(f"every {_ordinal(lag['every'])} of {lag['samples_in_window']} samples")
    if lag["partitions"] > len(lag["partitions_shown"]):
        notes.append(f"{len(lag['partitions_shown'])} of {lag['partitions']} partitions: the largest lag now")
    lags = [s["total_lag"] for s in samples] + [p["lag"] for s in samples for p in s["partitions"]]
    plot = Plot.for_values(lags)
    series: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {"total": []}
    for sample in samples:
        series["total"].append((sample, {"lag": sample["total_lag"]}))
        for row in sample["partitions"]:
            series.setdefault(f"{row['topic']}[{row['partition']}]", []).append((sample, row))
    parts, legend = [axes(plot, "lag (offsets)", time_labels(plot, start, end), "time (UTC)")], []
    for index, (name, points) in enumerate(series.items()):
        color = PALETTE[index % len(PALETTE)]
        legend.append((name, color))
        xy = [(plot.x_share(time_share(_time(s["at"]), start, end)), plot.y(row["lag"])) for s, row in points]
        parts.append(polyline(xy, color))
        for (x, y), (sample, row) in zip(xy, points, strict=True):
            fill = color if sample["source"] == "commit" else "none"
            values = {
                "chart": "lag", "series": name, "sample-id": sample["sample_id"], "time": sample["at"],
                "source": sample["source"], "epoch-id": sample["epoch_id"], "topic": row.get("topic"),
                "partition": row.get("partition"), "cursor": row.get("cursor"),
                "high-watermark": row.get("high_watermark"), "value": row["lag"],
            }  # fmt: skip
            tip = f"{name} lag {number(row['lag'])} at {sample['at']} ({sample['source']})"
            parts.append(
                f'<circle class="point" cx="{x}" cy="{y}" r="2.5" fill="{fill}" stroke="{color}"'
                f"{attributes(values)}><title>{esc(tip)}</title></circle>"
            )
    return _figure("lag", "Lag per partition", notes, svg(plot, "lag over time", "".join(parts)), legend)


def _bars(data: dict[str, Any], chart: str, key: str, title: str, y_title: str, color: str) -> str:
    """One bar per epoch of ``epoch[key]`` (an unknown value: a ``?`` at the baseline)."""
    epochs = data["epochs"]
    plot = Plot.for_values([e[key] for e in epochs if e[key] is not None])
    parts = [_epoch_axes(plot, epochs, y_title)]
    for i, epoch in enumerate(epochs):
        base = {"chart": chart, "epoch-id": epoch["epoch_id"], "time": epoch["committed_at"]}
        value = epoch[key]
        if value is None:
            x = plot.band_center(i, len(epochs))
            parts.append(
                f'<text class="point unknown" x="{x}" y="{plot.baseline - 3}" text-anchor="middle"'
                f"{attributes({**base, 'value': 'unknown'})}>?"
                f"<title>epoch {esc(epoch['epoch_id'])}: unknown</title></text>"
            )
            continue
        x, width = plot.band(i, len(epochs))
        y = plot.y(value)
        parts.append(
            f'<rect class="point" x="{x}" y="{y}" width="{width}" height="{round(plot.baseline - y, 2)}" '
            f'fill="{color}"{attributes({**base, "value": value})}>'
            f"<title>epoch {esc(epoch['epoch_id'])}: {esc(number(value))} {esc(y_title)}</title></rect>"
        )
    return _figure(chart, title, _epoch_notes(data), svg(plot, title, "".join(parts)), [])


def _phase_stack(epoch: dict[str, Any]) -> list[tuple[str, float, str]]:
    """``(phase, seconds, fill)`` bottom to top: the known phases, then the part they leave
    unexplained when some are unknown (hatched)."""
    known = {p: v for p, v in epoch["phases"].items() if v is not None}
    stack = [(p, known[p], PHASE_COLORS[p]) for p in PHASES if p in known]
    if len(known) < len(PHASES) and epoch["duration_s"] is not None:
        stack.append(("unknown", round(epoch["duration_s"] - sum(known.values()), 3), UNKNOWN))
    return stack


def phases_chart(data: dict[str, Any]) -> str:
    """Each epoch's duration as a stack of its phases; the part its phases do not account
    for (phases it did not record) is hatched, ``data-phase="unknown"``."""
    epochs = data["epochs"]
    stacks = [_phase_stack(e) for e in epochs]
    plot = Plot.for_values([sum(max(s, 0.0) for _, s, _ in stack) for stack in stacks])
    parts = [_epoch_axes(plot, epochs, "seconds")]
    for i, (epoch, stack) in enumerate(zip(epochs, stacks, strict=True)):
        x, width = plot.band(i, len(epochs))
        bottom = 0.0
        for phase, seconds, fill in stack:
            top = bottom + max(seconds, 0.0)
            y_top, y_bottom = plot.y(top), plot.y(bottom)
            values = {
                "chart": "phases", "epoch-id": epoch["epoch_id"], "time": epoch["committed_at"],
                "phase": phase, "value": seconds,
            }  # fmt: skip
            label = PHASE_LABELS.get(phase, phase)
            parts.append(
                f'<rect class="point segment" x="{x}" y="{y_top}" width="{width}" '
                f'height="{round(y_bottom - y_top, 2)}" fill="{fill}"{attributes(values)}>'
                f"<title>epoch {esc(epoch['epoch_id'])}: {esc(label)} {esc(number(seconds))} s</title></rect>"
            )
            bottom = top
    legend = [(PHASE_LABELS[p], PHASE_COLORS[p]) for p in PHASES] + [("unknown", UNKNOWN)]
    body = svg(plot, "epoch duration by phase", "".join(parts), hatch=True)
    return _figure("phases", "Epoch duration by phase", _epoch_notes(data), body, legend)


def render_charts(data: dict[str, Any], window_label: str) -> str:
    """The charts section of the Epochs page for the charts JSON ``data``."""
    charts = [
        lag_chart(data),
        _bars(data, "records", "records", "Records per epoch", "records", PALETTE[0]),
        _bars(data, "rate", "records_per_s", "Records per second (Spark tasks)", "records/s", PALETTE[2]),
        phases_chart(data),
        _bars(data, "dead-letters", "dead_letters", "Dead letters per epoch", "dead letters", PALETTE[7]),
    ]
    name, window = data["pipeline"], data["window"]
    json_link = f"api/pipelines/{quote(name, safe='')}/charts?window={quote(window, safe='')}"
    return (
        f'<section id="charts" data-pipeline="{esc(name)}" data-window="{esc(window)}">'
        f'<h2>Charts <span class="muted">{esc(name)}, {esc(window_label)} '
        f'(<a href="{esc(json_link)}">JSON</a>)</span></h2>'
        f'<div class="charts">{"".join(charts)}</div></section>'
    )


def _ordinal(n: int) -> str:
    """``2nd``, ``3rd``, ``11th``, ``22nd``..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _time(iso: str) -> datetime:
    return datetime.fromisoformat(iso)
