"""The ``eo-ledger`` subcommands: each takes the ledger role it needs (``LedgerReads``,
``LedgerAdministration``; ``commit``: the ``OperatorTools``) and returns JSON-ready data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.lag import lag as lag_of
from airflow_provider_eo.ledger.model.ledger_roles import LedgerAdministration, LedgerReads
from airflow_provider_eo.ledger.model.offsets import OffsetSource
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.retention_policy import PrunePolicy
from airflow_provider_eo.ledger.protocol import OperatorTools


def migrate(ledger: LedgerAdministration) -> dict[str, Any]:
    """Apply pending migrations: ``{"applied": [...], "versions": [...]}``."""
    applied = ledger.migrate()
    return {"applied": applied, "versions": ledger.schema_versions()}


def pipelines(ledger: LedgerReads) -> list[dict[str, Any]]:
    """Every pipeline with epoch counts per state, open epochs, cursors, dead letters, gaps
    (:meth:`PipelineOverview.to_json`), read in one transaction."""
    return [overview.to_json() for overview in ledger.pipeline_overviews()]


def epochs(ledger: LedgerReads, wanted: EpochFilter) -> list[dict[str, Any]]:
    """Epochs matching ``wanted``, oldest first (with a limit: the newest N of them)."""
    return [epoch.to_summary() for epoch in ledger.epochs(wanted)]


def lag(ledger: LedgerReads, pipeline: str, offsets: OffsetSource) -> dict[str, Any]:
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


def commit(tools: OperatorTools, epoch_id: int, pipeline: Callable[[str], PipelineSpec]) -> dict[str, Any]:
    """Commit one epoch exactly as ``CommitEpochOperator`` does (:meth:`OperatorTools.commit`:
    offsets to the group, the ledger, then the pipeline's dead letters to their topic).

    ``pipeline`` looks the epoch's pipeline up by name; it is consulted after the epoch's
    state allows the commit (a RESERVED epoch is refused first)."""
    outcome = tools.commit(epoch_id, pipeline=pipeline)
    return {
        "epoch": outcome.epoch.to_summary(),
        "already_committed": outcome.already_committed,
        "group_id": outcome.group_id,
        "published": outcome.published_json(),
        "dead_letters": outcome.dead_letters.to_json() if outcome.dead_letters else None,
    }


def pipeline_lookup(pipelines_file: str | None, group_id: str | None) -> Callable[[str], PipelineSpec]:
    """Looks a pipeline up in the pipelines file (its consumer group replaced by ``group_id``
    when given); ``PipelineConfigError`` naming the file and pipeline when it cannot."""

    def spec_of(pipeline: str) -> PipelineSpec:
        from airflow_provider_eo.config import load_pipeline

        spec = load_pipeline(pipeline, pipelines_file)
        return spec if group_id is None else replace(spec, group_id=group_id)

    return spec_of


def prune(
    ledger: LedgerAdministration,
    pipelines: Sequence[str] | None,
    policy: PrunePolicy,
    *,
    yes: bool,
    batch: int,
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
        "audits": sum(count.audits for count in counts),
        "audit_findings": sum(count.audit_findings for count in counts),
    }


def kafka_hook(conn_id: str) -> Any:
    """The Kafka hook (``OffsetSource`` + ``OffsetPublisher``) for ``AIRFLOW_CONN_<CONN_ID>``,
    its settings resolved at once: ``KafkaFeatureMissing`` when the installed librdkafka
    cannot speak them (before the command changes anything)."""
    from airflow_provider_eo.hooks.kafka import EoKafkaHook

    hook = EoKafkaHook(kafka_conn_id=conn_id)
    hook.settings  # noqa: B018 (resolving is the check)
    return hook
