"""The ``eo-ledger`` subcommands: each takes a ``Ledger`` and returns JSON-ready data."""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_eo.ledger.commit import commit_epoch
from airflow_provider_eo.ledger.ledger import Ledger
from airflow_provider_eo.ledger.offsets import OffsetPublisher, OffsetSource
from airflow_provider_eo.ledger.states import EpochKind, EpochState


def migrate(ledger: Ledger) -> dict[str, Any]:
    """Apply pending migrations: ``{"applied": [...], "versions": [...]}``."""
    applied = ledger.migrate()
    return {"applied": applied, "versions": ledger.schema_versions()}


def pipelines(ledger: Ledger) -> list[dict[str, Any]]:
    """Every pipeline with epoch counts per state, open epochs, cursors, dead letters, gaps."""
    result = []
    for name in ledger.list_pipelines():
        result.append(
            {
                "name": name,
                "epochs": ledger.epoch_counts(name),
                "open_epochs": [
                    {"epoch_id": e.epoch_id, "kind": e.kind.value, "state": e.state.value, "run_id": e.run_id}
                    for e in ledger.open_epochs(name)
                ],
                "cursors": [
                    {"topic": topic, "partition": partition, "cursor": cursor}
                    for (topic, partition), cursor in sorted(ledger.cursors(name).items())
                ],
                "dead_letters": ledger.dead_letter_count(name),
                "gaps": ledger.gaps(name),
            }
        )
    return result


def epochs(ledger: Ledger, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Matching epochs, oldest first (``--limit``: the newest N of them)."""
    found = ledger.list_epochs(
        pipeline=args.pipeline,
        state=args.state,
        kind=args.kind,
        min_id=args.min_id,
        max_id=args.max_id,
        limit=args.limit,
        newest_first=args.limit is not None,
    )
    return [epoch.to_detail() for epoch in sorted(found, key=lambda e: e.epoch_id)]


def lag(ledger: Ledger, pipeline: str, offsets: OffsetSource) -> dict[str, Any]:
    """Per pinned partition: cursor, watermarks and ``lag = high - cursor`` (>= 0)."""
    cursors = ledger.cursors(pipeline)
    watermarks = offsets.watermarks(sorted(cursors))
    partitions = []
    for (topic, partition), cursor in sorted(cursors.items()):
        low, high = watermarks[(topic, partition)]
        partitions.append(
            {
                "topic": topic,
                "partition": partition,
                "cursor": cursor,
                "low_watermark": low,
                "high_watermark": high,
                "lag": max(high - cursor, 0),
            }
        )
    return {"pipeline": pipeline, "total_lag": sum(p["lag"] for p in partitions), "partitions": partitions}


def commit(ledger: Ledger, args: argparse.Namespace) -> dict[str, Any]:
    """Commit one epoch exactly as ``CommitEpochOperator`` does (``commit_epoch``).

    Kafka and the pipelines file are only consulted for a WRITTEN stream epoch.
    """
    epoch = ledger.get_epoch(args.epoch_id)
    group_id = args.group_id
    publisher: OffsetPublisher = _NoPublisher()
    if epoch.kind is EpochKind.STREAM and epoch.state is EpochState.WRITTEN:
        group_id = group_id or _pipeline_group(epoch.pipeline, args.pipelines_file)
        publisher = kafka_hook(args.kafka_conn_id)
    outcome = commit_epoch(ledger, args.epoch_id, publisher, group_id or "")
    return {
        "epoch": outcome.epoch.to_detail(),
        "already_committed": outcome.already_committed,
        "group_id": group_id if outcome.published else None,
        "published": [
            {"topic": topic, "partition": partition, "offset": offset}
            for (topic, partition), offset in sorted(outcome.published.items())
        ],
    }


def _pipeline_group(pipeline: str, pipelines_file: str | None) -> str:
    from airflow_provider_eo.config import load_pipelines

    specs = load_pipelines(pipelines_file)
    if pipeline not in specs:
        raise LookupError(f"pipeline {pipeline!r} is not in the pipelines file: pass --group-id")
    return specs[pipeline].group_id


def dead_letters(ledger: Ledger, pipeline: str, limit: int) -> dict[str, Any]:
    """The first ``limit`` dead letters of ``pipeline`` and their total count."""
    return {
        "pipeline": pipeline,
        "count": ledger.dead_letter_count(pipeline),
        "dead_letters": ledger.list_dead_letters(pipeline, limit),
    }


def kafka_hook(conn_id: str) -> Any:
    """The Kafka hook (``OffsetSource`` + ``OffsetPublisher``) for ``AIRFLOW_CONN_<CONN_ID>``."""
    from airflow_provider_eo.hooks.kafka import EoKafkaHook

    return EoKafkaHook(kafka_conn_id=conn_id)


class _NoPublisher:
    """For epochs that publish nothing (backfills, or a commit that is refused/a no-op)."""

    def commit_offsets(self, group_id: str, offsets: Any) -> None:
        raise AssertionError("this epoch publishes no offsets")
