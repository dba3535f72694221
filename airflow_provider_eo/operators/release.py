"""ReleaseEpochOperator: the backfill run's teardown, so no backfill epoch outlives its run.

Runs whether the run's other tasks succeeded or failed (an Airflow teardown task).
It finds the run's own open backfill epochs in the ledger (not through XCom, so an
epoch whose reserve task died before returning is found too): WRITTEN -> committed
(backfill commits publish nothing); RESERVED -> ABORTED, the run is over and nothing
will write it any more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator, Context

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.ledger.states import EpochKind, EpochState
from airflow_provider_eo.operators.common import load_spec, log_epoch, publish_and_commit, run_identity


class ReleaseEpochOperator(BaseOperator):
    """Settle this run's open backfill epochs; returns ``{committed: [ids], aborted: [ids]}``.

    :param pipeline: pipeline name (templated).
    :param pipelines_file: pipelines YAML path (templated); None: default resolution.
    :param ledger_conn_id: PostgreSQL connection of the ledger.
    :param kafka_conn_id: Kafka connection (unused by backfill commits, kept for symmetry).
    """

    template_fields: Sequence[str] = ("pipeline", "pipelines_file")
    ui_color = "#eeeeee"

    def __init__(
        self,
        *,
        pipeline: str,
        pipelines_file: str | None = None,
        ledger_conn_id: str = "eo_ledger",
        kafka_conn_id: str = "eo_kafka",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pipeline = pipeline
        self.pipelines_file = pipelines_file
        self.ledger_conn_id = ledger_conn_id
        self.kafka_conn_id = kafka_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        spec = load_spec(self.pipelines_file, self.pipeline)
        dag_id, run_id = run_identity(context)
        result: dict[str, Any] = {"pipeline": spec.name, "committed": [], "aborted": []}
        with EoLedgerHook(self.ledger_conn_id).get_ledger() as ledger:
            for epoch in ledger.open_epochs(spec.name, EpochKind.BACKFILL):
                if (epoch.dag_id, epoch.run_id) != (dag_id, run_id):
                    continue
                if epoch.state is EpochState.WRITTEN:
                    publish_and_commit(
                        ledger, EoKafkaHook(self.kafka_conn_id), spec, epoch.epoch_id, self.log
                    )
                    result["committed"].append(epoch.epoch_id)
                else:
                    aborted = ledger.abort(epoch.epoch_id, f"backfill run {run_id} ended before its commit")
                    log_epoch(self.log, "aborted epoch", aborted)
                    result["aborted"].append(epoch.epoch_id)
        self.log.info("released pipeline=%s run_id=%s summary=%s", spec.name, run_id, result)
        return result
