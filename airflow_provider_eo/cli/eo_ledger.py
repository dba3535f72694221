"""``eo-ledger``: inspect and operate the epoch ledger; every answer is JSON on stdout.

The ledger DSN is never a required argument (arguments are visible to other users):
``--dsn`` if given, else ``EO_LEDGER_DSN``, else the Airflow connection
``AIRFLOW_CONN_<CONN_ID>`` (``--conn-id``, default ``eo_ledger``; URI or JSON form).
Kafka (``lag``, ``commit``) uses ``AIRFLOW_CONN_<KAFKA_CONN_ID>`` (default ``eo_kafka``).
Errors are printed as ``{"error": ..., "type": ...}`` on stderr: exit 1 for failures,
2 for refusals (``commit``/``abort`` without ``--yes``, ``prune`` without a pipeline
selector or a criterion, ``history`` of an unknown pipeline, every ``seek``/``reset``
refusal: cli/seek_commands.py; ``audit``'s: cli/audit_commands.py; ``audits`` and
``audit-show``'s: cli/audit_results_commands.py) and usage errors; ``audit``
exits 1 when it finds discrepancies. ``prune`` without ``--yes`` is a dry
run. Every change is recorded in the epochs' history as ``eo-ledger`` ``user@host``
(``Actor.cli()``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from airflow_provider_eo.cli import (
    audit_commands,
    audit_results_commands,
    dead_letter_commands,
    history_commands,
    seek_commands,
)
from airflow_provider_eo.cli import ledger_commands as commands
from airflow_provider_eo.cli.replay_commands import ReplayRefused
from airflow_provider_eo.clients.connections import DEFAULT_KAFKA_CONN_ID, DEFAULT_LEDGER_CONN_ID
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.refusals import SeekRefused
from airflow_provider_eo.ledger.model.retention_policy import PrunePolicy
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState

DSN_ENV = "EO_LEDGER_DSN"


class Refused(Exception):
    """The command needs an explicit confirmation flag."""


def resolve_dsn(dsn: str | None, conn_id: str) -> str:
    """``dsn`` > ``$EO_LEDGER_DSN`` > libpq DSN of ``AIRFLOW_CONN_<CONN_ID>``."""
    if dsn:
        return dsn
    if os.environ.get(DSN_ENV):
        return os.environ[DSN_ENV]
    from airflow_provider_eo.clients.connection_settings import postgres_dsn
    from airflow_provider_eo.clients.connections import connection_from_env

    return postgres_dsn(connection_from_env(conn_id))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="eo-ledger", description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help=f"libpq DSN (prefer ${DSN_ENV}: arguments are visible in ps)")
    parser.add_argument(
        "--conn-id",
        default=DEFAULT_LEDGER_CONN_ID,
        help=f"read AIRFLOW_CONN_<ID> (default {DEFAULT_LEDGER_CONN_ID})",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="apply pending schema migrations")
    sub.add_parser("pipelines", help="pipelines with epoch counts, open epochs and cursors")
    epochs = sub.add_parser("epochs", help="epochs with their ranges (oldest first)")
    epochs.add_argument("--pipeline")
    epochs.add_argument("--state", choices=[state.value for state in EpochState])
    epochs.add_argument("--kind", choices=[kind.value for kind in EpochKind])
    epochs.add_argument("--min-id", type=int)
    epochs.add_argument("--max-id", type=int)
    epochs.add_argument("--limit", type=int, help="only the N newest matching epochs")
    show = sub.add_parser("epoch", help="one epoch with its ranges, mapping digest and history")
    show.add_argument("epoch_id", type=int)
    spec = sub.add_parser("spec", help="the pipeline spec the ledger recorded under a mapping digest")
    spec.add_argument("digest")
    lag = sub.add_parser("lag", help="cursor, watermarks and lag per partition")
    lag.add_argument("--pipeline", required=True)
    lag.add_argument("--kafka-conn-id", default=DEFAULT_KAFKA_CONN_ID)
    commit = sub.add_parser(
        "commit",
        help="publish a WRITTEN epoch's offsets, mark it COMMITTED, publish the pipeline's dead letters"
        " (the pipeline must be declared in the pipelines file)",
    )
    commit.add_argument("epoch_id", type=int)
    commit.add_argument("--yes", action="store_true", help="confirm")
    commit.add_argument("--kafka-conn-id", default=DEFAULT_KAFKA_CONN_ID)
    commit.add_argument("--group-id", help="consumer group to publish to instead of the pipeline's own")
    commit.add_argument("--pipelines-file", help="pipelines YAML (default: $EO_PIPELINES_FILE)")
    abort = sub.add_parser("abort", help="abort a RESERVED epoch (WRITTEN with --allow-written)")
    abort.add_argument("epoch_id", type=int)
    abort.add_argument("--yes", action="store_true", help="confirm")
    abort.add_argument("--allow-written", action="store_true", help="also abort a WRITTEN epoch")
    abort.add_argument("--reason", default="aborted by operator (eo-ledger)")
    prune = sub.add_parser(
        "prune", help="delete old COMMITTED/ABORTED epochs (dry run without --yes); cursors never move"
    )
    prune.add_argument("--pipeline", action="append", help="a pipeline to prune (repeatable)")
    prune.add_argument("--all-pipelines", action="store_true", help="prune every pipeline of the ledger")
    prune.add_argument("--older-than-days", type=int, help="settled more than N days ago")
    prune.add_argument("--keep-last", type=int, help="keep the N newest settled epochs of each pipeline")
    prune.add_argument("--batch-size", type=int, default=1000, help="epochs per delete transaction")
    prune.add_argument("--yes", action="store_true", help="delete (without it: report what would go)")
    dead_letter_commands.add_parser(sub)
    history_commands.add_history_parser(sub)
    seek_commands.add_parsers(sub)
    audit_commands.add_parser(sub)
    audit_results_commands.add_parsers(sub)
    return parser


def epoch_filter(args: argparse.Namespace) -> EpochFilter:
    """The typed filter of ``eo-ledger epochs`` (argparse has checked state and kind)."""
    return EpochFilter(
        pipeline=args.pipeline,
        states=None if args.state is None else frozenset({EpochState(args.state)}),
        kind=None if args.kind is None else EpochKind(args.kind),
        min_id=args.min_id,
        max_id=args.max_id,
        limit=args.limit,
    )


def prune_policy(args: argparse.Namespace) -> PrunePolicy:
    """The policy of ``eo-ledger prune``; ``Refused`` (exit 2) when it names no criterion."""
    try:
        return PrunePolicy(older_than_days=args.older_than_days, keep_last=args.keep_last)
    except ValueError as exc:
        raise Refused(str(exc)) from exc


def run(args: argparse.Namespace) -> Any:
    """Execute the parsed command; returns the JSON-serializable answer."""
    if args.command in seek_commands.COMMANDS:
        return seek_commands.run(args, resolve_dsn(args.dsn, args.conn_id))
    if args.command in ("commit", "abort") and not args.yes:
        raise Refused(f"refusing to {args.command} epoch {args.epoch_id} without --yes")
    if args.command == "prune" and bool(args.pipeline) == args.all_pipelines:
        raise Refused("prune needs exactly one of --pipeline P (repeatable) or --all-pipelines")
    from airflow_provider_eo.ledger.model.actors import Actor
    from airflow_provider_eo.ledger.protocol import OperatorTools
    from airflow_provider_eo.ledger.store.postgres_ledger import Ledger

    dsn = resolve_dsn(args.dsn, args.conn_id)
    with Ledger(dsn, auto_migrate=args.command != "migrate", actor=Actor.cli()) as ledger:
        if args.command == "migrate":
            return commands.migrate(ledger)
        if args.command == "pipelines":
            return commands.pipelines(ledger)
        if args.command == "epochs":
            return commands.epochs(ledger, epoch_filter(args))
        if args.command == "epoch":
            return history_commands.epoch(ledger, args.epoch_id)
        if args.command == "spec":
            return history_commands.recorded_spec(ledger, args.digest, Refused)
        if args.command == "history":
            return history_commands.pipeline_history(ledger, args, Refused)
        if args.command == "lag":
            return commands.lag(ledger, args.pipeline, commands.kafka_hook(args.kafka_conn_id))
        if args.command == "prune":
            return commands.prune(
                ledger, args.pipeline, prune_policy(args), yes=args.yes, batch=args.batch_size
            )
        if args.command == audit_commands.COMMAND:
            return audit_commands.run(args, ledger, Refused)
        if args.command in audit_results_commands.COMMANDS:
            return audit_results_commands.run(args, ledger, Refused)
        if args.command == dead_letter_commands.COMMAND:
            return dead_letter_commands.run(args, ledger, Refused)
        if args.command == "commit":
            kafka = commands.kafka_hook(args.kafka_conn_id)  # connects at its first call only
            tools = OperatorTools(ledger, kafka=lambda: kafka, dead_letter_topics=kafka.dead_letter_topic)
            lookup = commands.pipeline_lookup(args.pipelines_file, args.group_id)
            return commands.commit(tools, args.epoch_id, lookup)
        aborted = OperatorTools(ledger).abort(args.epoch_id, args.reason, allow_written=args.allow_written)
        return aborted.to_summary()


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries only the JSON answer
            result = run(args)
    except (Refused, ReplayRefused, SeekRefused) as exc:
        print(json.dumps({"error": str(exc), "type": "Refused"}), file=sys.stderr)
        return 2
    except Exception as exc:
        print(json.dumps({"error": str(exc), "type": type(exc).__name__}), file=sys.stderr)
        return 1
    if isinstance(result, audit_commands.AuditOutput):
        print(result.printed())
        return result.status
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
