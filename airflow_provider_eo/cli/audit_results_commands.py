"""``eo-ledger audits --pipeline P [--limit N]`` and ``eo-ledger audit-show ID``: the kept
audits read back (``eo.audits``, ``eo.audit_findings``; docs/audit.md, "Results kept").

``audits`` prints ``{pipeline, audits: [...]}``: the pipeline's ``limit`` newest audits
(default 20), newest first, each ``AuditRecord.to_json()`` without its findings (window,
counts, verdict, ``findings_total``, source, run, times). ``audit-show ID`` prints one
audit with the findings it kept (at most 1,000; ``summary.findings_not_shown`` counts the
rest). Refusals (exit 2): an unknown pipeline, a limit below 1, an unknown audit id.
Read-only.
"""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_eo.cli.history_commands import UNKNOWN_PIPELINE
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads

LIST_COMMAND = "audits"
SHOW_COMMAND = "audit-show"
COMMANDS = (LIST_COMMAND, SHOW_COMMAND)
DEFAULT_AUDITS_LIMIT = 20


def add_parsers(sub: Any) -> None:
    """Register ``audits`` and ``audit-show`` on the ``eo-ledger`` subparsers ``sub``."""
    listing = sub.add_parser(LIST_COMMAND, help="a pipeline's kept audits, newest first")
    listing.add_argument("--pipeline", required=True)
    listing.add_argument(
        "--limit", type=int, default=DEFAULT_AUDITS_LIMIT, help=f"at most N (default {DEFAULT_AUDITS_LIMIT})"
    )
    show = sub.add_parser(SHOW_COMMAND, help="one kept audit with its findings")
    show.add_argument("audit_id", type=int)


def run(args: argparse.Namespace, ledger: LedgerReads, refused: type[Exception]) -> dict[str, Any]:
    """Execute ``audits`` or ``audit-show``; raises ``refused`` (exit 2) as the module says."""
    if args.command == SHOW_COMMAND:
        found = ledger.audit(args.audit_id)
        if found is None:
            raise refused(f"no audit {args.audit_id} in the ledger (eo-ledger audits --pipeline P)")
        return found.to_json()
    if args.limit < 1:
        raise refused(f"--limit must be >= 1, not {args.limit}")
    if args.pipeline not in ledger.list_pipelines():
        raise refused(UNKNOWN_PIPELINE.format(pipeline=args.pipeline))
    kept = ledger.audits(args.pipeline, args.limit)
    return {
        "pipeline": args.pipeline,
        "audits": [record.brief() for record in kept],
    }
