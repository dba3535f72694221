"""The ``eo-ledger`` subcommands: each takes a ``Ledger`` (``commit``: an
``EpochProtocol``) and returns JSON-ready data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from airflow_provider_eo.ledger.model.lag import lag as lag_of
from airflow_provider_eo.ledger.model.offsets import OffsetSource
from airflow_provider_eo.ledger.protocol.epoch_protocol import EpochProtocol, GroupId
from airflow_provider_eo.ledger.store.epoch_rows import EpochFilter
from airflow_provider_eo.ledger.store.ledger import Ledger
from airflow_provider_eo.ledger.store.retention import PrunePolicy

#: The reason ``eo-ledger commit`` records in the epoch's history.
MANUAL_COMMIT_REASON = "committed by operator (eo-ledger)"


def migrate(ledger: Ledger) -> dict[str, Any]:
    """Apply pending migrations: ``{"applied": [...], "versions": [...]}``."""
    applied = ledger.migrate()
    return {"applied": applied, "versions": ledger.schema_versions()}


def pipelines(ledger: Ledger) -> list[dict[str, Any]]:
    """Every pipeline with epoch counts per state, open epochs, cursors, dead letters, gaps
    (:meth:`PipelineOverview.to_json`), read in one transaction."""
    return [overview.to_json() for overview in ledger.pipeline_overviews()]


def epochs(ledger: Ledger, wanted: EpochFilter) -> list[dict[str, Any]]:
    """Epochs matching ``wanted``, oldest first (with a limit: the newest N of them)."""
    return [epoch.to_summary() for epoch in ledger.epochs(wanted)]


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
                "lag": lag_of(cursor, high),
            }
        )
    return {"pipeline": pipeline, "total_lag": sum(p["lag"] for p in partitions), "partitions": partitions}


def commit(protocol: EpochProtocol, epoch_id: int, group_id: GroupId) -> dict[str, Any]:
    """Commit one epoch exactly as ``CommitEpochOperator`` does (:meth:`EpochProtocol.commit`).

    ``group_id`` may be a lookup by pipeline name: it is consulted (and Kafka is
    connected) only for a WRITTEN stream epoch.
    """
    outcome = protocol.commit(epoch_id, group_id=group_id, reason=MANUAL_COMMIT_REASON)
    return {
        "epoch": outcome.epoch.to_summary(),
        "already_committed": outcome.already_committed,
        "group_id": outcome.group_id,
        "published": [
            {"topic": topic, "partition": partition, "offset": offset}
            for (topic, partition), offset in sorted(outcome.published.items())
        ],
    }


def pipeline_group(pipelines_file: str | None) -> Callable[[str], str]:
    """Looks a pipeline's consumer group up in the pipelines file; ``PipelineConfigError``
    (naming the file and pipeline, and suggesting ``--group-id``) when it cannot."""

    def group_of(pipeline: str) -> str:
        from airflow_provider_eo.config import PipelineConfigError, load_pipeline

        try:
            return load_pipeline(pipeline, pipelines_file).group_id
        except PipelineConfigError as exc:
            problem = f"{exc.problem} (or pass --group-id)"
            raise PipelineConfigError(exc.file, exc.pipeline, exc.field, problem) from exc

    return group_of


def prune(
    ledger: Ledger, pipelines: Sequence[str] | None, policy: PrunePolicy, *, yes: bool, batch: int
) -> dict[str, Any]:
    """Prune settled epochs of ``pipelines`` (every pipeline when None): with ``yes``,
    delete them in batches of ``batch``; without it, only count them (a dry run)."""
    counts = (
        ledger.prune(pipelines, policy, batch_size=batch) if yes else ledger.prune_plan(pipelines, policy)
    )
    return {
        "dry_run": not yes,
        "policy": {"older_than_days": policy.older_than_days, "keep_last": policy.keep_last},
        "pipelines": [count.to_json() for count in counts],
        "epochs": sum(count.epochs for count in counts),
        "ranges": sum(count.ranges for count in counts),
        "transitions": sum(count.transitions for count in counts),
        "lag_samples": sum(count.lag_samples for count in counts),
    }


def kafka_hook(conn_id: str) -> Any:
    """The Kafka hook (``OffsetSource`` + ``OffsetPublisher``) for ``AIRFLOW_CONN_<CONN_ID>``."""
    from airflow_provider_eo.hooks.kafka import EoKafkaHook

    return EoKafkaHook(kafka_conn_id=conn_id)
