"""Helpers shared by the coordinator operators (reserve, commit, recover).

``publish_and_commit`` wraps the ledger's single commit path (``commit_epoch``, also
used by ``eo-ledger commit``): ``CommitEpochOperator`` and ``RecoverEpochsOperator``
both use it, so a recovery re-commit is exactly a commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from airflow_provider_eo.config import PipelineConfigError, PipelineSpec, load_pipelines
from airflow_provider_eo.config.loader import resolve_pipelines_file
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.commit import commit_epoch
from airflow_provider_eo.ledger.models import Epoch
from airflow_provider_eo.ledger.offsets import OffsetPublisher


class InfoLog(Protocol):
    """What these helpers need of a logger (``BaseOperator.log`` or a stdlib logger)."""

    def info(self, msg: str, /, *args: Any) -> Any: ...


def load_spec(pipelines_file: str | None, pipeline: str) -> PipelineSpec:
    """The named pipeline from the pipelines file (``None``: the default resolution)."""
    specs = load_pipelines(pipelines_file)
    if pipeline not in specs:
        known = ", ".join(sorted(specs)) or "none"
        file = str(resolve_pipelines_file(pipelines_file))
        raise PipelineConfigError(file, pipeline, None, f"pipeline not declared (declared: {known})")
    return specs[pipeline]


def run_identity(context: Mapping[str, Any]) -> tuple[str, str]:
    """``(dag_id, run_id)`` of the running task, from ``context["ti"]`` (or ``dag_run``)."""
    ti = context.get("ti")
    if ti is not None:
        return str(ti.dag_id), str(ti.run_id)
    dag_run = context["dag_run"]
    return str(dag_run.dag_id), str(dag_run.run_id)


def epoch_summary(epoch: Epoch) -> dict[str, Any]:
    """The XCom shape of an epoch: id, pipeline, kind, state, owner, fencing token,
    ranges ``[{topic, partition, start, end, records}]`` and ``records_total``."""
    return {
        "epoch_id": epoch.epoch_id,
        "pipeline": epoch.pipeline,
        "kind": epoch.kind.value,
        "state": epoch.state.value,
        "fencing_token": str(epoch.fencing_token),
        "dag_id": epoch.dag_id,
        "run_id": epoch.run_id,
        "ranges": [r.to_summary() for r in epoch.ranges],
        "records_total": epoch.record_count,
    }


def fmt_ranges(epoch: Epoch) -> str:
    """Compact ``topic[p]=[start,end)`` list for log lines."""
    return ",".join(f"{r.topic}[{r.partition}]=[{r.start},{r.end})" for r in epoch.ranges)


def log_epoch(log: InfoLog, what: str, epoch: Epoch) -> None:
    """One structured line: pipeline, epoch id, kind, state, ranges and record count."""
    log.info(
        "%s pipeline=%s epoch_id=%s kind=%s state=%s ranges=%s records=%s",
        what, epoch.pipeline, epoch.epoch_id, epoch.kind.value, epoch.state.value, fmt_ranges(epoch),
        epoch.record_count,
    )  # fmt: skip


def publish_and_commit(
    ledger: Ledger, publisher: OffsetPublisher, spec: PipelineSpec, epoch_id: int, log: InfoLog
) -> dict[str, Any]:
    """Commit one epoch through the ledger's single commit path
    (:func:`airflow_provider_eo.ledger.commit.commit_epoch`): WRITTEN -> publish each
    range's end to ``spec.group_id`` (stream epochs only) -> COMMITTED; COMMITTED ->
    no-op (``action == "noop"``); RESERVED/ABORTED -> ``IllegalTransition``, nothing
    published. An epoch of another pipeline is a ``ValueError``.
    """
    epoch = ledger.get_epoch(epoch_id)
    if epoch.pipeline != spec.name:
        raise ValueError(f"epoch {epoch_id} belongs to pipeline {epoch.pipeline!r}, not {spec.name!r}")
    tag = f"pipeline={spec.name} epoch_id={epoch_id} kind={epoch.kind.value}"
    outcome = commit_epoch(ledger, epoch_id, publisher, spec.group_id)
    offsets = outcome.published
    if outcome.already_committed:
        log.info("epoch already COMMITTED, nothing to do %s ranges=%s", tag, fmt_ranges(epoch))
    else:
        published = ",".join(f"{t}[{p}]={o}" for (t, p), o in sorted(offsets.items())) or "-"
        log.info("published offsets %s group=%s offsets=%s", tag, spec.group_id, published)
        log.info("epoch COMMITTED %s ranges=%s records=%s", tag, fmt_ranges(epoch), epoch.record_count)
    return {
        "epoch_id": epoch.epoch_id,
        "pipeline": epoch.pipeline,
        "kind": epoch.kind.value,
        "state": outcome.epoch.state.value,
        "action": "noop" if outcome.already_committed else "committed",
        "published": [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(offsets.items())],
        "records_total": epoch.record_count,
    }
