"""RecoverEpochsOperator: settle a pipeline's open epochs left by earlier runs."""

from __future__ import annotations

from typing import Any

from airflow.sdk import Asset, Context

from airflow_provider_eo.assets import recommits_alias
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import EpochKind
from airflow_provider_eo.ledger.planning.recovery_plan import Action
from airflow_provider_eo.operators.announce import report_settled_commits
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator
from airflow_provider_eo.operators.run_context import run_identity

LIVE_RUN_STATES = ("queued", "running")


class RecoverEpochsOperator(PipelineOperator):
    """Step 4 of docs/DESIGN.md section 2: first task of every run, and its own DAG.

    Settles the open epochs of ``pipeline`` (of ``kind``; all kinds when None) as
    :meth:`EpochProtocol.recover` decides: WRITTEN -> re-committed; RESERVED of this run
    or of a run Airflow reports queued or running -> kept; any other RESERVED ->
    ABORTED. Only epochs of ``kind`` are touched: stream recovery never aborts backfills.

    Returns (XCom) ``{pipeline, kind, recommitted: [epoch_id], aborted: [epoch_id],
    kept: [epoch_id]}`` (``kind`` is "stream", "backfill" or "all").

    Each re-committed epoch is announced as an event of ``table_asset`` (through the
    :func:`~airflow_provider_eo.assets.recommits_alias` outlet: nothing re-committed, no
    event) and sends its metrics, as :class:`CommitEpochOperator` does.

    :param kind: ``"stream"`` (default), ``"backfill"``, or None for both.
    :param table_asset: the pipeline table's Asset (``assets.asset_for``); None: no events.
    Other parameters: :class:`PipelineOperator` (re-commits go through ``kafka_conn_id``).
    """

    ui_color = "#fef7e0"

    def __init__(
        self, *, kind: str | None = "stream", table_asset: Asset | None = None, **kwargs: Any
    ) -> None:
        if table_asset is not None:
            kwargs["outlets"] = [*(kwargs.get("outlets") or []), recommits_alias(table_asset)]
        super().__init__(**kwargs)
        self.table_asset = table_asset
        if kind not in (EpochKind.STREAM.value, EpochKind.BACKFILL.value, None):
            raise ValueError(f"kind must be 'stream', 'backfill' or None, got {kind!r}")
        self.kind = kind

    def execute(self, context: Context) -> dict[str, Any]:
        spec = self.pipeline_spec()
        kind = EpochKind(self.kind) if self.kind else None
        with self.epoch_protocol(context) as protocol:
            settled = protocol.recover(
                spec, run_identity(context), lambda run: _run_is_live(context, run), kind
            )
        report_settled_commits(context, settled, self.table_asset)
        return {
            "pipeline": spec.name,
            "kind": self.kind or "all",
            "recommitted": settled.plan.ids(Action.COMMIT),
            "aborted": settled.plan.ids(Action.ABORT),
            "kept": settled.plan.ids(Action.KEEP),
        }


def _run_is_live(context: Context, run: RunIdentity) -> bool:
    """Whether Airflow reports the DAG run queued or running (through the Task SDK, no
    metadata DB access). Without a task runner's ``ti`` (direct ``execute`` calls) no
    other run counts as live."""
    count_runs = getattr(context.get("ti"), "get_dr_count", None)
    if count_runs is None:
        return False
    return int(count_runs(dag_id=run.dag_id, run_ids=[run.run_id], states=list(LIVE_RUN_STATES))) > 0
