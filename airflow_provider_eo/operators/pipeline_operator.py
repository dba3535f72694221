"""PipelineOperator: what every coordinator operator shares (a pipeline, its connections)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from airflow.sdk import BaseOperator

from airflow_provider_eo.config import PipelineSpec, load_pipeline
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.ledger.protocol import EpochProtocol


class PipelineOperator(BaseOperator):
    """Base of reserve, commit, recover and release: adapters of :class:`EpochProtocol`.

    ``__init__`` only stores names (it runs at DAG parse time); the pipeline file is
    read and connections are opened in ``execute``.

    :param pipeline: pipeline name in the pipelines file (templated).
    :param pipelines_file: pipelines YAML path; None: ``EO_PIPELINES_FILE`` (templated).
    :param ledger_conn_id: PostgreSQL connection of the ledger.
    :param kafka_conn_id: Kafka connection (librdkafka settings in extra).
    """

    template_fields: Sequence[str] = ("pipeline", "pipelines_file")

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

    def pipeline_spec(self) -> PipelineSpec:
        """The pipeline's spec; raises ``PipelineConfigError`` naming file, pipeline and field."""
        return load_pipeline(self.pipeline, self.pipelines_file)

    def epoch_protocol(self) -> AbstractContextManager[EpochProtocol]:
        """The protocol over this operator's ledger and Kafka connections."""
        return open_protocol(self.ledger_conn_id, self.kafka_conn_id)


@contextmanager
def open_protocol(ledger_conn_id: str, kafka_conn_id: str) -> Iterator[EpochProtocol]:
    """An :class:`EpochProtocol` over the two Airflow connections (Kafka is connected only
    if a call needs it); the ledger is closed afterwards."""
    with EoLedgerHook(ledger_conn_id).get_ledger() as ledger:
        yield EpochProtocol(ledger, kafka=lambda: EoKafkaHook(kafka_conn_id))
