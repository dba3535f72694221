"""A kept audit's own page (``/eo/audits/{id}``): its window, counts, verdict and findings.

Built from ``AuditRecord.to_json()`` (:func:`~.views.audit`): the facts (pipeline, verdict,
findings counted and kept, source and run, times), the window's epochs (each linked to its
page), the counts per category (offsets, cells, findings per kind), the ranges that were not
auditable (retention), and one ``tr.finding`` per kept finding (at most 1,000; the rest are
only counted), each naming its epoch, topic/partition/offset, row, column, the expected
version and bytes, and what HBase holds. Every value is escaped; rows carry ``data-*``
attributes for scripts and tests. docs/audit.md says what to do about each finding.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from airflow_provider_eo.plugins.html_parts import document, error_page, esc, when

#: Epochs of the window linked one by one (a longer window: the first ones, then a count).
MAX_EPOCH_LINKS = 200
#: The counts a category shows, in order (keys of the report's ``offsets`` and ``cells``).
OFFSET_COUNTS = ("ranges", "offsets", "records_written", "dead_letters", "skipped_offsets")
CELL_COUNTS = ("verified", "covered_by_newer", "deletes_verified", "later_data")
FINDING_COLUMNS = (
    "#", "Kind", "Epoch", "Where (topic[partition] @ offset)", "Row", "Column",
    "Expected version", "Expected bytes", "HBase holds", "Detail",
)  # fmt: skip


def _epoch_link(epoch_id: Any) -> str:
    if epoch_id is None:
        return '<span class="muted">-</span>'
    return f'<a class="epoch-link" href="../epochs/{esc(epoch_id)}">{esc(epoch_id)}</a>'


def _counts(title: str, values: dict[str, Any], keys: tuple[str, ...], css_id: str) -> str:
    """A two-row table of ``keys`` (those present, then any other) and their values."""
    shown = [k for k in keys if k in values] + sorted(k for k in values if k not in keys)
    head = "".join(f'<th class="num">{esc(k.replace("_", " "))}</th>' for k in shown)
    cells = "".join(f'<td class="num" data-count="{esc(k)}">{esc(values[k])}</td>' for k in shown)
    return f'<h2>{esc(title)}</h2><table class="facts" id="{css_id}"><tr>{head}</tr><tr>{cells}</tr></table>'


def _where(f: dict[str, Any]) -> str:
    if f.get("topic") is None:
        return '<span class="muted">-</span>'
    at = "" if f.get("offset") is None else f" @ {f['offset']}"
    return f"<code>{esc(f['topic'])}[{esc(f.get('partition'))}]{esc(at)}</code>"


def _finding_row(seq: int, f: dict[str, Any]) -> str:
    def code(key: str) -> str:
        value = f.get(key)
        return '<span class="muted">-</span>' if value is None else f"<code>{esc(value)}</code>"

    return (
        f'<tr class="finding" data-kind="{esc(f.get("kind"))}" data-epoch-id="{esc(f.get("epoch_id"))}" '
        f'data-offset="{esc(f.get("offset"))}"><td class="num">{seq}</td><td>{esc(f.get("kind"))}</td>'
        f"<td>{_epoch_link(f.get('epoch_id'))}</td><td>{_where(f)}</td><td>{code('row')}</td>"
        f'<td>{code("column")}</td><td class="num">{esc(f.get("expected_version"))}</td>'
        f"<td>{code('expected_bytes')}</td><td>{code('hbase_holds')}</td><td>{esc(f.get('detail'))}</td></tr>"
    )


def _not_auditable(items: list[dict[str, Any]]) -> str:
    if not items:
        return ""
    rows = "".join(
        f'<li class="not-auditable" data-epoch-id="{esc(i.get("epoch_id"))}">'
        f"epoch {_epoch_link(i.get('epoch_id'))} <code>{esc(i.get('topic'))}[{esc(i.get('partition'))}] "
        f"[{esc(i.get('start'))}, {esc(i.get('end'))})</code>"
        f" low watermark {esc(i.get('low_watermark'))}, vote {esc(i.get('vote'))}</li>"
        for i in items
    )
    return f"<h2>Not auditable (retention deleted their records)</h2><ul>{rows}</ul>"


def render_audit_page(a: dict[str, Any]) -> str:
    """The whole HTML document of one audit (``AuditRecord.to_json()``, findings included)."""
    summary = a["summary"]
    verdict = a["verdict"]
    kept, not_shown = len(a["findings"]), int(summary.get("findings_not_shown", 0))
    back = "../?" + urlencode({"pipeline": a["pipeline"]})
    epochs = " ".join(_epoch_link(epoch_id) for epoch_id in a["epoch_ids"][:MAX_EPOCH_LINKS])
    if len(a["epoch_ids"]) > MAX_EPOCH_LINKS:
        epochs += f' <span class="muted">and {len(a["epoch_ids"]) - MAX_EPOCH_LINKS} more</span>'
    run = "" if a["run_key"] is None else f" <code>{esc(a['run_key'])}</code>"
    facts = (
        '<table class="facts" id="audit-facts">'
        f"<tr><th>Pipeline</th><td>{esc(a['pipeline'])}</td></tr>"
        f'<tr><th>Verdict</th><td><span class="s audit a-{"clean" if verdict == "clean" else "findings"}" '
        f'id="verdict">{esc(verdict)}</span></td></tr>'
        f'<tr><th>Findings</th><td id="findings-total" data-total="{esc(a["findings_total"])}" '
        f'data-kept="{kept}">{esc(a["findings_total"])} ({kept} kept, {not_shown} not shown)</td></tr>'
        f"<tr><th>Window</th><td>epochs {esc(a['first_epoch'])}..{esc(a['last_epoch'])} "
        f'({esc(a["epochs"])} committed): <span id="window-epochs">{epochs}</span></td></tr>'
        f"<tr><th>Source</th><td>{esc(a['source'])}"
        f"{run}</td></tr>"
        f"<tr><th>Started</th><td>{when(a['started_at'])}</td></tr>"
        f"<tr><th>Finished</th><td>{when(a['finished_at'])}</td></tr></table>"
    )
    by_kind = summary.get("findings_by_kind") or {}
    findings = "".join(_finding_row(seq, f) for seq, f in enumerate(a["findings"], 1))
    head = "".join(f"<th>{esc(c)}</th>" for c in FINDING_COLUMNS)
    body = (
        f'<h1 id="audit" data-audit-id="{esc(a["audit_id"])}">Audit {esc(a["audit_id"])}</h1>'
        f'<div class="links"><a class="back" href="{esc(back)}">&larr; Epochs of {esc(a["pipeline"])}</a>'
        f'<a href="../api/audits/{esc(a["audit_id"])}">JSON</a></div>{facts}'
        f"{_counts('Offsets', summary.get('offsets') or {}, OFFSET_COUNTS, 'offset-counts')}"
        f"{_counts('Cells', summary.get('cells') or {}, CELL_COUNTS, 'cell-counts')}"
        f"{_counts('Findings by kind', by_kind, (), 'findings-by-kind') if by_kind else ''}"
        f"{_not_auditable(summary.get('not_auditable') or [])}"
        f'<h2>Findings <span class="muted">(in the order found; docs/audit.md: what to do)</span></h2>'
        f'<table id="findings"><tr>{head}</tr>'
        f"{findings or '<tr><td colspan=10 class=muted>none</td></tr>'}</table>"
    )
    return document(f"Audit {a['audit_id']}", body)


def render_missing_audit(audit_id: int) -> str:
    """The 404 page of an unknown (or hidden) audit."""
    return error_page("Audit not found", f"audit {audit_id} does not exist", back_href="../")
