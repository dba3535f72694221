"""``eo-ledger dead-letters``: list a pipeline's dead letters, publish them to its topic.

* ``eo-ledger dead-letters list --pipeline P [--limit N]`` (also the older form
  ``eo-ledger dead-letters --pipeline P``): the first N dead letters (ledger rows) and
  their count; reads only.
* ``eo-ledger dead-letters publish --pipeline P [--pipelines-file F] [--kafka-conn-id C]``:
  publish the pipeline's committed dead letters its ``dead_letters.topic`` lacks, exactly
  once (``OperatorTools.publish_dead_letters``; every commit does it too); answers
  ``{pipeline, topic, published, marker_before, marker_after}``. Changes nothing in the
  ledger. Refused (exit 2, nothing changed): no ``--pipeline``, a pipeline the pipelines
  file does not declare.
* ``eo-ledger dead-letters replay --pipeline P ...``: ``cli/replay_commands.py``.
"""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_eo.cli.replay_commands import add_replay_parser, run_replay
from airflow_provider_eo.clients.connections import DEFAULT_KAFKA_CONN_ID
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads, ProtocolStore
from airflow_provider_eo.ledger.store.postgres_ledger import Ledger

COMMAND = "dead-letters"


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``dead-letters`` and its subcommands on the ``eo-ledger`` subparsers ``sub``."""
    dead = sub.add_parser(COMMAND, help="a pipeline's dead letters: list (default), publish, replay")
    _selection(dead, argparse.SUPPRESS)
    actions = dead.add_subparsers(dest="dead_letters_command", required=False)
    listing = actions.add_parser("list", help="dead-lettered records of a pipeline (ledger rows)")
    _selection(listing, argparse.SUPPRESS)
    publish = actions.add_parser("publish", help="publish committed dead letters to the pipeline's topic")
    _selection(publish, argparse.SUPPRESS, limit=False)
    publish.add_argument("--pipelines-file", help="pipelines YAML (default: $EO_PIPELINES_FILE)")
    publish.add_argument("--kafka-conn-id", default=DEFAULT_KAFKA_CONN_ID)
    add_replay_parser(actions)
    dead.set_defaults(pipeline=None, limit=100, dead_letters_command="list")
    return dead


def _selection(parser: argparse.ArgumentParser, default: Any, *, limit: bool = True) -> None:
    # SUPPRESS: the option may be given before or after the subcommand, never overwritten
    parser.add_argument("--pipeline", default=default)
    if limit:
        parser.add_argument("--limit", type=int, default=default)


def run(args: argparse.Namespace, ledger: Ledger, refused: type[Exception]) -> dict[str, Any]:
    """Execute ``dead-letters``; raises ``refused`` (exit 2) before changing anything."""
    if args.dead_letters_command == "replay":
        return run_replay(args, ledger, refused)
    if not args.pipeline:
        raise refused("dead-letters needs --pipeline P")
    if args.dead_letters_command == "publish":
        return publish(ledger, args, refused)
    return listing(ledger, args.pipeline, args.limit)


def listing(ledger: LedgerReads, pipeline: str, limit: int) -> dict[str, Any]:
    """The first ``limit`` dead letters of ``pipeline`` and their total count."""
    return {
        "pipeline": pipeline,
        "count": ledger.dead_letter_count(pipeline),
        "dead_letters": ledger.list_dead_letters(pipeline, limit),
    }


def publish(ledger: ProtocolStore, args: argparse.Namespace, refused: type[Exception]) -> dict[str, Any]:
    """Publish the pipeline's dead letters (its spec from the pipelines file)."""
    from airflow_provider_eo.config import PipelineConfigError, load_pipeline
    from airflow_provider_eo.hooks.kafka import EoKafkaHook
    from airflow_provider_eo.ledger.protocol import OperatorTools

    try:
        spec = load_pipeline(args.pipeline, args.pipelines_file)
    except PipelineConfigError as exc:
        raise refused(str(exc)) from exc
    tools = OperatorTools(ledger, dead_letter_topics=EoKafkaHook(args.kafka_conn_id).dead_letter_topic)
    return tools.publish_dead_letters(spec).to_json()
