"""``eo-ledger seek`` and ``eo-ledger reset --to-group``: move a pipeline's stream cursors.

Adapters of :meth:`OperatorTools.seek` / :meth:`OperatorTools.reset_to_group` (the
protocol decides and refuses); this module adds the operator's guards that are not the
ledger's: ``--yes``, the pipeline in the pipelines file (its consumer group), and the
stream DAG paused, asked through Airflow's REST API (``AirflowApi``, connection
``airflow_api``) unless the operator states it with ``--stream-dag-paused``. Every check
runs before anything changes; every refusal exits 2 with ``{"error", "type": "Refused"}``.
The ledger records the changes as ``Actor.cli()`` (user@host).
"""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_eo.clients.connections import DEFAULT_KAFKA_CONN_ID

COMMANDS = frozenset({"seek", "reset"})


def add_parsers(sub: Any) -> None:
    """Add ``seek`` and ``reset`` to the ``eo-ledger`` subparsers ``sub``."""
    seek = sub.add_parser("seek", help="move a pipeline's stream cursors (forward: a gap; backward: re-read)")
    seek.add_argument("--to", required=True, help="earliest | latest | offset:N | timestamp:T (ISO or ms)")
    reset = sub.add_parser("reset", help="move a pipeline's stream cursors to its group's committed offsets")
    reset.add_argument("--to-group", action="store_true", required=True, help="the group's offsets")
    for parser in (seek, reset):
        parser.add_argument("--pipeline", required=True)
        parser.add_argument(
            "--partition", action="append", default=[], help="TOPIC:P (repeatable; default: all pinned)"
        )
        parser.add_argument("--reason", required=True, help="recorded with every cursor move")
        parser.add_argument("--yes", action="store_true", help="confirm")
        parser.add_argument(
            "--stream-dag-paused",
            action="store_true",
            help="state that the stream DAG is paused (instead of asking Airflow's API)",
        )
        parser.add_argument("--kafka-conn-id", default=DEFAULT_KAFKA_CONN_ID)
        parser.add_argument(
            "--group-id", help="consumer group (default: the pipeline's, from the pipelines file)"
        )
        parser.add_argument("--pipelines-file", help="pipelines YAML (default: $EO_PIPELINES_FILE)")
        parser.add_argument("--airflow-conn-id", default="airflow_api", help="Airflow REST API connection")


def run(args: argparse.Namespace, dsn: str) -> dict[str, Any]:
    """Run ``seek`` or ``reset`` on the ledger at ``dsn``; every refusal raises
    ``SeekRefused`` (exit 2) before anything changed."""
    from airflow_provider_eo.cli.ledger_commands import kafka_hook
    from airflow_provider_eo.ledger.model.actors import Actor
    from airflow_provider_eo.ledger.model.refusals import SeekRefused
    from airflow_provider_eo.ledger.planning.seek_plan import parse_partition, parse_target
    from airflow_provider_eo.ledger.protocol import OperatorTools
    from airflow_provider_eo.ledger.store.postgres_ledger import Ledger

    target = parse_target(args.to) if args.command == "seek" else None
    partitions = [parse_partition(text) for text in args.partition]
    if not args.yes:
        raise SeekRefused(f"refusing to {args.command} pipeline {args.pipeline!r} without --yes")
    group_id = args.group_id or _pipeline_group(args.pipeline, args.pipelines_file)
    if not args.stream_dag_paused:
        _require_paused_stream_dag(args.pipeline, args.airflow_conn_id)
    kafka = kafka_hook(args.kafka_conn_id)  # KafkaFeatureMissing here, before the ledger
    with Ledger(dsn, actor=Actor.cli()) as ledger:
        tools = OperatorTools(ledger, kafka=lambda: kafka)
        if target is not None:
            outcome = tools.seek(
                args.pipeline, target, group_id=group_id, reason=args.reason, partitions=partitions
            )
        else:
            outcome = tools.reset_to_group(
                args.pipeline, group_id=group_id, reason=args.reason, partitions=partitions
            )
    return outcome.to_json()


def _pipeline_group(pipeline: str, pipelines_file: str | None) -> str:
    """The pipeline's consumer group from the pipelines file; ``SeekRefused`` when the file
    does not declare it (or cannot be read)."""
    from airflow_provider_eo.config import PipelineConfigError, load_pipeline
    from airflow_provider_eo.ledger.model.refusals import SeekRefused

    try:
        return load_pipeline(pipeline, pipelines_file).group_id
    except PipelineConfigError as exc:
        raise SeekRefused(f"unknown pipeline {pipeline!r}: {exc} (or pass --group-id)") from exc


def _require_paused_stream_dag(pipeline: str, conn_id: str) -> None:
    """``SeekRefused`` unless Airflow's API says the pipeline's stream DAG is paused."""
    from airflow_provider_eo.clients.airflow_rest import AirflowApi
    from airflow_provider_eo.dag_ids import stream_dag_id
    from airflow_provider_eo.errors import ConfigError
    from airflow_provider_eo.ledger.model.refusals import SeekRefused

    dag_id = stream_dag_id(pipeline)
    try:
        paused = AirflowApi(conn_id).dag_is_paused(dag_id)
    except ConfigError as exc:  # AirflowApiError, ConnectionNotFound
        raise SeekRefused(
            f"cannot ask Airflow whether {dag_id} is paused ({exc}): pause the DAG, then run again "
            "with --stream-dag-paused"
        ) from exc
    if not paused:
        raise SeekRefused(
            f"the stream DAG {dag_id} is not paused: pause it (`airflow dags pause {dag_id}` or the UI), "
            "wait for its running epoch to finish, then run again"
        )
