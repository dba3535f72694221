"""``eo-ledger audit --pipeline P [--epochs A-B | --since T | --last N]``: verify committed epochs.

Re-reads the window's ranges from Kafka, recomputes what the write step wrote (the
pipeline's spec from the pipelines file: ``audit.epoch_spec.spec_for_epoch``) and compares
it with HBase, the ledger's dead letters and the consumer group (docs/audit.md). Reads
only: nothing is written to HBase, Kafka or the ledger, no cursor or group moves.

The audit is kept in the ledger (``Ledger.record_audit``, source ``cli``; the Epochs
page's badge, ``eo-ledger audits``, ``eo-ledger audit-show ID``) and its ``audit_id``
leads the answer; ``--no-record`` keeps nothing (``audit_id`` null), for a ledger role
that may only read. No metrics are sent: the CLI does not run inside Airflow (the audit
DAG sends ``eo.audit.*``, ``observability/audit_metrics.py``).

Answers the report (``--format json``, the default, or ``text``); exit status 0 when the
window is clean, 1 when discrepancies were found (or the audit failed), 2 for a refusal,
before anything is read from Kafka or HBase or kept: a pipeline the pipelines file does
not declare, ``--epochs`` that are malformed or name another pipeline's epochs, a
``--since`` that is not an ISO-8601 time, a window without a committed epoch.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from airflow_provider_eo.clients.connections import (
    DEFAULT_HBASE_CONN_ID,
    DEFAULT_KAFKA_CONN_ID,
    DEFAULT_SCHEMA_REGISTRY_CONN_ID,
)
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.ledger.store.postgres_ledger import Ledger

COMMAND = "audit"
#: Epochs audited without ``--epochs`` or ``--last``.
DEFAULT_LAST = 10

log = logging.getLogger(__name__)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``audit`` on the ``eo-ledger`` subparsers ``sub``."""
    audit = sub.add_parser(
        COMMAND, help="verify committed epochs against Kafka, HBase and the ledger (reads only)"
    )
    audit.add_argument("--pipeline", required=True)
    window = audit.add_mutually_exclusive_group()
    window.add_argument("--epochs", help="A-B: the pipeline's committed epochs with ids A to B (inclusive)")
    window.add_argument(
        "--since", help="T: the epochs committed at or after T (ISO-8601; without a zone: UTC)"
    )
    window.add_argument("--last", type=int, help=f"the N newest committed epochs (default {DEFAULT_LAST})")
    audit.add_argument("--pipelines-file", help="pipelines YAML (default: $EO_PIPELINES_FILE)")
    audit.add_argument("--kafka-conn-id", default=DEFAULT_KAFKA_CONN_ID)
    audit.add_argument("--hbase-conn-id", default=DEFAULT_HBASE_CONN_ID)
    audit.add_argument("--schema-registry-conn-id", default=DEFAULT_SCHEMA_REGISTRY_CONN_ID)
    audit.add_argument("--format", choices=["json", "text"], default="json")
    audit.add_argument(
        "--index-budget-bytes",
        type=int,
        default=None,
        help="bytes the window index may hold before the rows are audited in buckets (default 256 MiB)",
    )
    audit.add_argument(
        "--no-record", action="store_true", help="keep nothing in the ledger (a role that may only read)"
    )
    return audit


def epoch_bounds(text: str, refused: type[Exception]) -> tuple[int, int]:
    """``A-B`` (or ``A``) as inclusive ids; ``refused`` when malformed or ``A > B``."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if match is None:
        raise refused(f"--epochs must look like A-B (epoch ids), not {text!r}")
    first, last = int(match[1]), int(match[2] or match[1])
    if first > last:
        raise refused(f"--epochs {text}: the first id is above the last")
    return first, last


def since_time(text: str, refused: type[Exception]) -> datetime:
    """``--since``'s ISO-8601 time, timezone-aware (a time without a zone is UTC);
    ``refused`` when it is not one."""
    try:
        found = datetime.fromisoformat(text.strip())
    except ValueError:
        raise refused(f"--since must be an ISO-8601 time like 2026-11-29T04:00:00Z, not {text!r}") from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def window(ledger: LedgerReads, args: argparse.Namespace, refused: type[Exception]) -> list[Epoch]:
    """The committed epochs to audit, oldest first (``--epochs``, ``--since`` or ``--last``);
    ``refused`` when there is none, ``--epochs`` names another pipeline's epochs or a
    bound is malformed."""
    committed = frozenset({EpochState.COMMITTED})
    if args.epochs is not None:
        first, last = epoch_bounds(args.epochs, refused)
        foreign = [
            e for e in ledger.epochs(EpochFilter(min_id=first, max_id=last)) if e.pipeline != args.pipeline
        ]
        epochs = ledger.epochs(
            EpochFilter(pipeline=args.pipeline, states=committed, min_id=first, max_id=last)
        )
        named = {e.epoch_id: e.pipeline for e in foreign if e.epoch_id in (first, last)}
        if named or (foreign and not epochs):
            owners = sorted({e.pipeline for e in foreign})
            raise refused(f"epochs {args.epochs} are not pipeline {args.pipeline!r}'s (they are {owners}'s)")
        if not epochs:
            raise refused(f"pipeline {args.pipeline!r} has no committed epoch with an id in {first}-{last}")
        return epochs
    if args.since is not None:
        since = since_time(args.since, refused)
        epochs = ledger.epochs(EpochFilter(pipeline=args.pipeline, states=committed, committed_since=since))
        if not epochs:
            raise refused(f"pipeline {args.pipeline!r} has no epoch committed since {since.isoformat()}")
        return epochs
    limit = DEFAULT_LAST if args.last is None else args.last
    if limit < 1:
        raise refused(f"--last must be at least 1, not {limit}")
    epochs = ledger.epochs(EpochFilter(pipeline=args.pipeline, states=committed, limit=limit))
    if not epochs:
        raise refused(f"pipeline {args.pipeline!r} has no committed epoch")
    return epochs


@dataclass(frozen=True)
class AuditOutput:
    """What ``eo-ledger audit`` prints (``text``, or JSON of ``answer``) and its exit status."""

    answer: dict[str, Any]
    text: str | None
    status: int

    def printed(self) -> str:
        """The text report, or the JSON answer."""
        return self.text if self.text is not None else json.dumps(self.answer, indent=2)


def run(args: argparse.Namespace, ledger: Ledger, refused: type[Exception]) -> AuditOutput:
    """Refuse bad input (``refused``), then audit the window; the report as JSON or text."""
    from airflow_provider_eo.audit.audit_run import audit_window
    from airflow_provider_eo.audit.epoch_spec import spec_for_epoch
    from airflow_provider_eo.audit.range_audit import AuditConnections
    from airflow_provider_eo.cli.ledger_commands import kafka_hook
    from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs, kafka_client_config
    from airflow_provider_eo.clients.connections import connection_from_env
    from airflow_provider_eo.config import PipelineConfigError, load_pipelines
    from airflow_provider_eo.ledger.protocol import EpochProtocol
    from airflow_provider_eo.spark.driver.task_settings import schema_registry_from_env

    try:
        pipelines = load_pipelines(args.pipelines_file)
    except PipelineConfigError as exc:
        raise refused(str(exc)) from exc
    if args.index_budget_bytes is not None and args.index_budget_bytes < 1:
        raise refused(
            f"--index-budget-bytes must be a positive number of bytes, not {args.index_budget_bytes}"
        )
    if args.pipeline not in pipelines:
        raise refused(f"pipeline {args.pipeline!r} is not declared in the pipelines file")
    epochs = window(ledger, args, refused)
    spec = spec_for_epoch(epochs[-1], pipelines, ledger.pipeline_spec)
    kafka = kafka_client_config(connection_from_env(args.kafka_conn_id))
    connections = AuditConnections(
        kafka_config=kafka.config,
        read_timeout_s=kafka.timeout_s,
        hbase_kwargs=hbase_connection_kwargs(connection_from_env(args.hbase_conn_id)),
        hbase_conn_id=args.hbase_conn_id,
        schema_registry=schema_registry_from_env(spec, args.schema_registry_conn_id),
    )
    log.info(
        "audit start pipeline=%s epoch_ids=%d-%d", args.pipeline, epochs[0].epoch_id, epochs[-1].epoch_id
    )
    started = datetime.now(UTC)
    report = audit_window(
        epochs,
        lambda epoch: spec_for_epoch(epoch, pipelines, ledger.pipeline_spec),
        ledger,
        kafka_hook(args.kafka_conn_id),
        connections,
        replay_selection=EpochProtocol(ledger).replay_selection,
        **({} if args.index_budget_bytes is None else {"index_budget": args.index_budget_bytes}),
    )
    log.info(
        "audit done pipeline=%s verdict=%s findings=%d", args.pipeline, report.verdict, report.findings.total
    )
    answer = report.to_json()
    audit_id = None
    if not args.no_record:
        audit_id = ledger.record_audit(answer, run_key=None, source="cli", started_at=started)
        log.info("audit kept pipeline=%s audit_id=%s", args.pipeline, audit_id)
    text = None
    if args.format == "text":
        kept = "not kept (--no-record)" if audit_id is None else f"kept as audit {audit_id}"
        text = f"{kept}\n{report.text()}"
    return AuditOutput({"audit_id": audit_id, **answer}, text, exit_status(answer))


def exit_status(answer: dict[str, Any]) -> int:
    """0 for a clean window, 1 when the report names discrepancies."""
    return 0 if answer.get("verdict") == "clean" else 1
