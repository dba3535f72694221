"""ReleaseEpochOperator: the backfill run's teardown, so no backfill epoch outlives its run.

Runs whether the run's other tasks succeeded or failed (an Airflow teardown task). The
run's open backfill epochs are found in the ledger, not through XCom, so an epoch
whose reserve task died before returning is found too (:meth:`EpochProtocol.release`).
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Asset, Context

from airflow_provider_eo.assets import recommits_alias
from airflow_provider_eo.ledger.planning.recovery_plan import Action
from airflow_provider_eo.operators.announce import report_settled_commits
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator
from airflow_provider_eo.operators.run_context import run_identity


class ReleaseEpochOperator(PipelineOperator):
    """Settle this run's open backfill epochs: WRITTEN -> committed (no offsets published;
    the pipeline's dead letters are, as after every commit),
    RESERVED -> ABORTED. Returns ``{pipeline, committed: [ids], aborted: [ids]}``.

    An epoch committed here (its commit task failed) is announced on ``table_asset`` and
    sends its metrics, as :class:`RecoverEpochsOperator` does.

    :param table_asset: the pipeline table's Asset (``assets.asset_for``); None: no events.
    Other parameters: :class:`PipelineOperator`.
    """

    ui_color = "#eeeeee"

    def __init__(self, *, table_asset: Asset | None = None, **kwargs: Any) -> None:
        if table_asset is not None:
            kwargs["outlets"] = [*(kwargs.get("outlets") or []), recommits_alias(table_asset)]
        super().__init__(**kwargs)
        self.table_asset = table_asset

    def execute(self, context: Context) -> dict[str, Any]:
        spec = self.pipeline_spec()
        with self.epoch_protocol(context) as protocol:
            settled = protocol.release(spec, run_identity(context))
        report_settled_commits(context, settled, self.table_asset)
        return {
            "pipeline": spec.name,
            "committed": settled.plan.ids(Action.COMMIT),
            "aborted": settled.plan.ids(Action.ABORT),
        }
