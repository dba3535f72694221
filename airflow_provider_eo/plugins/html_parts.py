"""What the plugin's HTML pages share: escaping, the state and audit badges, ranges, the
style sheet and the document around a page's body.

No external asset. The one script, :data:`TOP_LINKS`, exists because Airflow 3.3 shows
plugin pages in an iframe sandboxed with ``allow-scripts allow-same-origin`` but without
``allow-top-navigation``: a ``target="_top"`` link to an Airflow page is blocked there
(Chromium: "Unsafe attempt to initiate navigation"). The script follows such a link from
the top document (same origin), as if it had been clicked there; opened outside an
iframe, or where the top document cannot be reached, the link works on its own.
"""

from __future__ import annotations

from html import escape
from typing import Any

CSS = """
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
a.audit{text-decoration:none}.a-clean{background:#38a169}.a-findings{background:#c53030}
.a-window{background:#d69e2e}
tr.history td{border-bottom:1px solid #e2e8f0;padding-top:0}ol.transitions{margin:2px 0;padding-left:20px}
a{color:#2b6cb0}.links{display:flex;gap:14px;flex-wrap:wrap;margin:6px 0 10px}
table.facts{width:auto}table.facts th{text-align:left;font-weight:600;padding-right:16px}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:12px}
figure.chart{margin:0;border:1px solid #e2e8f0;border-radius:4px;padding:6px 8px}
figcaption{margin-bottom:2px}.note{color:#718096;font-size:12px;margin-left:6px}
.chart-svg{width:100%;height:auto;display:block}.chart-svg text{fill:currentColor;font-size:11px}
.chart-svg .grid{stroke:currentColor;stroke-opacity:.12}
.chart-svg .axis{stroke:currentColor;stroke-opacity:.6}
.chart-svg .axis-title{opacity:.8}.legend{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:12px}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle;border-radius:2px}
.swatch.hatch{background:repeating-linear-gradient(45deg,currentColor 0 2px,transparent 2px 5px);opacity:.5}
@media (prefers-color-scheme:dark){body{background:#1a202c;color:#e2e8f0}a{color:#90cdf4}
th{background:#2d3748}th,td{border-color:#4a5568}.banner{background:#3b1f1f}
figure.chart{border-color:#4a5568}.note,.muted{color:#a0aec0}}
"""

TOP_LINKS = """
document.addEventListener("click", function (event) {
  var link = event.target.closest ? event.target.closest('a[target="_top"]') : null;
  if (!link || window.top === window) return;
  try {
    var top = window.top.document, follow = top.createElement("a");
    follow.href = link.href;
    top.body.appendChild(follow);
    follow.click();
    follow.remove();
    event.preventDefault();
  } catch (error) {}
});
"""
"""Follow ``target="_top"`` links from the top document (see the module doc)."""


def esc(value: Any) -> str:
    """``value`` as HTML text or attribute (None: empty)."""
    return escape("" if value is None else str(value), quote=True)


def state_badge(state: str) -> str:
    """An epoch state as a coloured badge."""
    return f'<span class="s s-{esc(state)}">{esc(state)}</span>'


def audit_badge(audit: dict[str, Any] | None, href: str) -> str:
    """An epoch's newest audit (``EpochAudit.to_json``) as a badge linking to the audit's
    page at ``href``: ``clean``; ``N findings`` (the kept findings naming this epoch); or
    ``window: discrepancies`` when the audit's findings name only other epochs (or were
    not kept). Never audited (None): a muted dash."""
    if audit is None:
        return '<span class="muted">-</span>'
    found = int(audit["epoch_findings"])
    if audit["verdict"] == "clean":
        kind, label = "clean", "clean"
    elif found:
        kind, label = "findings", f"{found} finding{'' if found == 1 else 's'}"
    else:
        kind, label = "window", "window: discrepancies"
    return (
        f'<a class="s audit a-{kind}" href="{esc(href)}" data-audit-id="{esc(audit["audit_id"])}" '
        f'data-verdict="{esc(audit["verdict"])}" data-epoch-findings="{found}" '
        f'title="audit {esc(audit["audit_id"])}, {esc(audit["finished_at"])}">{esc(label)}</a>'
    )


def ranges_cell(ranges: list[dict[str, Any]]) -> str:
    """Ranges as printed everywhere: ``topic[p] [start, end)`` and their record count."""
    lines = [
        f'<span class="nw"><code>{esc(r["topic"])}[{esc(r["partition"])}] '
        f'[{esc(r["start"])}, {esc(r["end"])})</code> <span class="muted">{esc(r["records"])}</span></span>'
        for r in ranges
    ]
    return "<br>".join(lines) or '<span class="muted">none</span>'


def when(iso: str | None) -> str:
    """An ISO timestamp shortened to ``YYYY-MM-DD HH:MM:SS`` (the full one as its title)."""
    if not iso:
        return '<span class="muted">-</span>'
    return f'<span class="nw" title="{esc(iso)}">{esc(iso[:19].replace("T", " "))}</span>'


def top_link(href: str, inner_html: str, css_class: str) -> str:
    """A link to an Airflow page (``href`` relative to the current page) that leaves the
    iframe; ``inner_html`` is markup already escaped."""
    return f'<a class="{esc(css_class)}" href="{esc(href)}" target="_top">{inner_html}</a>'


def document(title: str, body: str) -> str:
    """A whole HTML document: ``title``, the style sheet, :data:`TOP_LINKS` and ``body``."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style><script>{TOP_LINKS}</script></head>"
        f"<body>{body}</body></html>"
    )


def error_page(title: str, message: str, *, back_href: str | None = None) -> str:
    """A whole HTML page stating an error: ``title`` as heading, ``message`` (escaped),
    and a link to the Epochs page at ``back_href`` when given."""
    back = f'<p><a href="{esc(back_href)}">Epochs</a></p>' if back_href else ""
    return document(title, f'<h1>{esc(title)}</h1><p class="err">{esc(message)}</p>{back}')
