"""RecoverEpochsOperator: settle a pipeline's open epochs left by earlier runs."""

from __future__ import annotations

from typing import Any

from airflow.sdk import Context

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.states import EpochKind, EpochState
from airflow_provider_eo.operators.common import fmt_ranges, publish_and_commit, run_identity
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator

LIVE_RUN_STATES = ("queued", "running")


class RecoverEpochsOperator(PipelineOperator):
    """Step 4 of docs/DESIGN.md section 2: first task of every run, and its own DAG.

    For each open epoch of ``pipeline`` (of ``kind``; all kinds when None), oldest first:
    WRITTEN -> re-committed exactly as ``CommitEpochOperator`` does (publish, COMMITTED);
    RESERVED owned by the current run (dag_id, run_id) -> kept; RESERVED owned by another
    run that Airflow reports queued or running -> kept (a live run finishes its own
    epoch); RESERVED owned by any other run -> ABORTED (its ranges return to the next
    reservation). Only epochs of ``kind`` are touched: stream recovery never aborts
    backfill epochs.

    Returns (XCom) ``{pipeline, kind, recommitted: [epoch_id], aborted: [epoch_id],
    kept: [epoch_id]}`` (``kind`` is "stream", "backfill" or "all").

    :param kind: ``"stream"`` (default), ``"backfill"``, or None for both.
    Other parameters: :class:`PipelineOperator` (re-commits go through ``kafka_conn_id``).
    """

    ui_color = "#fef7e0"

    def __init__(self, *, kind: str | None = "stream", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if kind not in (EpochKind.STREAM.value, EpochKind.BACKFILL.value, None):
            raise ValueError(f"kind must be 'stream', 'backfill' or None, got {kind!r}")
        self.kind = kind

    def execute(self, context: Context) -> dict[str, Any]:
        spec = self.pipeline_spec()
        with self.open_ledger() as ledger:
            result = self._recover(ledger, self.kafka_hook(), spec, context)
        self.log.info("recovery done pipeline=%s kind=%s summary=%s", spec.name, result["kind"], result)
        return result

    def _recover(
        self, ledger: Ledger, kafka: EoKafkaHook, spec: PipelineSpec, context: Context
    ) -> dict[str, Any]:
        dag_id, run_id = run_identity(context)
        kind = EpochKind(self.kind) if self.kind else None
        result: dict[str, Any] = {"pipeline": spec.name, "kind": self.kind or "all"}
        result.update(recommitted=[], aborted=[], kept=[])
        for epoch in ledger.open_epochs(spec.name, kind):
            if kind is not None and epoch.kind != kind:
                continue  # defensive: never touch another kind
            tag = f"pipeline={spec.name} epoch_id={epoch.epoch_id} kind={epoch.kind.value}"
            owner = f"owner={epoch.dag_id}/{epoch.run_id}"
            if epoch.state == EpochState.WRITTEN:
                self.log.info("recovery: re-committing WRITTEN epoch %s ranges=%s", tag, fmt_ranges(epoch))
                publish_and_commit(ledger, kafka, spec, epoch.epoch_id, self.log)
                result["recommitted"].append(epoch.epoch_id)
            elif (epoch.dag_id, epoch.run_id) == (dag_id, run_id):
                self.log.info("recovery: keeping RESERVED epoch of this run %s %s", tag, owner)
                result["kept"].append(epoch.epoch_id)
            elif _run_is_live(context, epoch.dag_id, epoch.run_id):
                self.log.info("recovery: keeping RESERVED epoch of a live run %s %s", tag, owner)
                result["kept"].append(epoch.epoch_id)
            else:
                reason = (
                    f"recovery by {dag_id}/{run_id}: owning run {epoch.dag_id}/{epoch.run_id} is not live"
                )
                ledger.abort(epoch.epoch_id, reason)
                self.log.info("recovery: ABORTED stale RESERVED epoch %s %s", tag, owner)
                result["aborted"].append(epoch.epoch_id)
        return result


def _run_is_live(context: Context, dag_id: str, run_id: str) -> bool:
    """Whether Airflow reports the DAG run queued or running (through the Task SDK, no
    metadata DB access). Without a task runner's ``ti`` (direct ``execute`` calls) no
    other run counts as live."""
    count_runs = getattr(context.get("ti"), "get_dr_count", None)
    if count_runs is None:
        return False
    return int(count_runs(dag_id=dag_id, run_ids=[run_id], states=list(LIVE_RUN_STATES))) > 0
