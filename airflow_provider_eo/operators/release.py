"""ReleaseEpochOperator: the backfill run's teardown, so no backfill epoch outlives its run.

Runs whether the run's other tasks succeeded or failed (an Airflow teardown task).
It finds the run's own open backfill epochs in the ledger (not through XCom, so an
epoch whose reserve task died before returning is found too): WRITTEN -> committed
(backfill commits publish nothing); RESERVED -> ABORTED, the run is over and nothing
will write it any more.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Context

from airflow_provider_eo.ledger.states import EpochKind, EpochState
from airflow_provider_eo.operators.common import log_epoch, publish_and_commit, run_identity
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator


class ReleaseEpochOperator(PipelineOperator):
    """Settle this run's open backfill epochs; returns ``{committed: [ids], aborted: [ids]}``.

    Parameters: :class:`PipelineOperator`.
    """

    ui_color = "#eeeeee"

    def execute(self, context: Context) -> dict[str, Any]:
        spec = self.pipeline_spec()
        dag_id, run_id = run_identity(context)
        result: dict[str, Any] = {"pipeline": spec.name, "committed": [], "aborted": []}
        with self.open_ledger() as ledger:
            for epoch in ledger.open_epochs(spec.name, EpochKind.BACKFILL):
                if (epoch.dag_id, epoch.run_id) != (dag_id, run_id):
                    continue
                if epoch.state is EpochState.WRITTEN:
                    publish_and_commit(ledger, self.kafka_hook(), spec, epoch.epoch_id, self.log)
                    result["committed"].append(epoch.epoch_id)
                else:
                    aborted = ledger.abort(epoch.epoch_id, f"backfill run {run_id} ended before its commit")
                    log_epoch(self.log, "aborted epoch", aborted)
                    result["aborted"].append(epoch.epoch_id)
        self.log.info("released pipeline=%s run_id=%s summary=%s", spec.name, run_id, result)
        return result
