"""PipelineOperator: what every coordinator operator shares (a pipeline, its connections)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.operators.common import load_spec


class PipelineOperator(BaseOperator):
    """Base of reserve, commit, recover and release.

    ``__init__`` only stores names (it runs at DAG parse time); the pipeline file is
    read and connections are opened in ``execute``.

    :param pipeline: pipeline name in the pipelines file (templated).
    :param pipelines_file: pipelines YAML path; None: ``EO_PIPELINES_FILE`` or the default (templated).
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
        return load_spec(self.pipelines_file, self.pipeline)

    def open_ledger(self) -> Ledger:
        """A ledger session (use as a context manager)."""
        return EoLedgerHook(self.ledger_conn_id).get_ledger()

    def kafka_hook(self) -> EoKafkaHook:
        """The Kafka hook (offset source and publisher)."""
        return EoKafkaHook(self.kafka_conn_id)
