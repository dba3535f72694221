"""ReleaseEpochOperator: the backfill run's teardown, so no backfill epoch outlives its run.

Runs whether the run's other tasks succeeded or failed (an Airflow teardown task). The
run's open backfill epochs are found in the ledger, not through XCom, so an epoch
whose reserve task died before returning is found too (:meth:`EpochProtocol.release`).
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Context

from airflow_provider_eo.ledger.recovery_plan import Action
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator
from airflow_provider_eo.operators.xcom import run_identity


class ReleaseEpochOperator(PipelineOperator):
    """Settle this run's open backfill epochs: WRITTEN -> committed (publishes nothing),
    RESERVED -> ABORTED. Returns ``{pipeline, committed: [ids], aborted: [ids]}``.

    Parameters: :class:`PipelineOperator`.
    """

    ui_color = "#eeeeee"

    def execute(self, context: Context) -> dict[str, Any]:
        spec = self.pipeline_spec()
        with self.epoch_protocol() as protocol:
            settled = protocol.release(spec, run_identity(context))
        return {
            "pipeline": spec.name,
            "committed": settled.plan.ids(Action.COMMIT),
            "aborted": settled.plan.ids(Action.ABORT),
        }
