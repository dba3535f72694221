"""``eo-ledger audit --pipeline P [--epochs A-B | --last N]``: verify a window of committed epochs.

Re-reads the window's ranges from Kafka, recomputes what the write step wrote (the
pipeline's spec from the pipelines file: ``audit.epoch_spec.spec_for_epoch``) and compares
it with HBase, the ledger's dead letters and the consumer group (docs/audit.md). Reads
only: nothing is written to HBase, Kafka or the ledger, no cursor or group moves.

Answers the report (``--format json``, the default, or ``text``); exit status 0 when the
window is clean, 1 when discrepancies were found (or the audit failed), 2 for a refusal,
before anything is read from Kafka or HBase: a pipeline the pipelines file does not
declare, ``--epochs`` that are malformed or name another pipeline's epochs, a window
without a committed epoch.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from dataclasses import dataclass
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
    window.add_argument("--last", type=int, help=f"the N newest committed epochs (default {DEFAULT_LAST})")
    audit.add_argument("--pipelines-file", help="pipelines YAML (default: $EO_PIPELINES_FILE)")
    audit.add_argument("--kafka-conn-id", default=DEFAULT_KAFKA_CONN_ID)
    audit.add_argument("--hbase-conn-id", default=DEFAULT_HBASE_CONN_ID)
    audit.add_argument("--schema-registry-conn-id", default=DEFAULT_SCHEMA_REGISTRY_CONN_ID)
    audit.add_argument("--format", choices=["json", "text"], default="json")
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


def window(ledger: LedgerReads, args: argparse.Namespace, refused: type[Exception]) -> list[Epoch]:
    """The committed epochs to audit, oldest first; ``refused`` when there is none or
    ``--epochs`` names another pipeline's epochs."""
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
    report = audit_window(
        epochs,
        lambda epoch: spec_for_epoch(epoch, pipelines, ledger.pipeline_spec),
        ledger,
        kafka_hook(args.kafka_conn_id),
        connections,
        replay_selection=EpochProtocol(ledger).replay_selection,
    )
    log.info(
        "audit done pipeline=%s verdict=%s findings=%d", args.pipeline, report.verdict, report.findings.total
    )
    text = report.text() if args.format == "text" else None
    return AuditOutput(report.to_json(), text, exit_status(report.to_json()))


def exit_status(answer: dict[str, Any]) -> int:
    """0 for a clean window, 1 when the report names discrepancies."""
    return 0 if answer.get("verdict") == "clean" else 1
