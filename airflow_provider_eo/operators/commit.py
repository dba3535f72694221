"""CommitEpochOperator: publish a WRITTEN epoch's offsets to the group, then mark it COMMITTED."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator, Context

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.operators.common import load_spec, publish_and_commit


class CommitEpochOperator(BaseOperator):
    """Step 3 of DESIGN.md section 2 for one epoch.

    WRITTEN: a stream epoch publishes the end offset of every range that moved to the
    pipeline's consumer group (read back to verify), then the ledger marks it COMMITTED;
    a backfill epoch publishes nothing. COMMITTED: no-op success (logged). RESERVED or
    ABORTED: ``IllegalTransition`` naming epoch and state; nothing is published.

    Returns (XCom) ``{epoch_id, pipeline, kind, state: "COMMITTED", action: "committed" |
    "noop", published: [{topic, partition, offset}], records_total}``.

    :param pipeline: pipeline name (templated).
    :param epoch_id: epoch to commit, int or template such as
        ``"{{ ti.xcom_pull(task_ids='reserve')['epoch_id'] }}"`` (templated).
    :param pipelines_file: pipelines YAML path (templated); None: default resolution.
    :param ledger_conn_id: PostgreSQL connection of the ledger.
    :param kafka_conn_id: Kafka connection the offsets are published through.
    """

    template_fields: Sequence[str] = ("pipeline", "epoch_id", "pipelines_file")
    ui_color = "#e6f4ea"

    def __init__(
        self,
        *,
        pipeline: str,
        epoch_id: int | str,
        pipelines_file: str | None = None,
        ledger_conn_id: str = "eo_ledger",
        kafka_conn_id: str = "eo_kafka",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pipeline = pipeline
        self.epoch_id = epoch_id
        self.pipelines_file = pipelines_file
        self.ledger_conn_id = ledger_conn_id
        self.kafka_conn_id = kafka_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        try:
            epoch_id = int(str(self.epoch_id).strip())
        except ValueError:
            raise ValueError(f"epoch_id must be an integer, got {self.epoch_id!r}") from None
        spec = load_spec(self.pipelines_file, self.pipeline)
        with EoLedgerHook(self.ledger_conn_id).get_ledger() as ledger:
            return publish_and_commit(ledger, EoKafkaHook(self.kafka_conn_id), spec, epoch_id, self.log)
