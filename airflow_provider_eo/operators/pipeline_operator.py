"""PipelineOperator: what every coordinator operator shares (a pipeline, its connections)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from airflow.sdk import BaseOperator, Context

from airflow_provider_eo.clients.connections import DEFAULT_KAFKA_CONN_ID, DEFAULT_LEDGER_CONN_ID
from airflow_provider_eo.config import PipelineSpec, load_pipeline
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.protocol import EpochProtocol
from airflow_provider_eo.operators.run_context import task_actor


class PipelineOperator(BaseOperator):
    """Base of reserve, commit, recover and release: adapters of :class:`EpochProtocol`.

    ``__init__`` only stores names and the spec it is given (it runs at DAG parse time);
    connections are opened in ``execute``. One spec per task run: the DAG factory passes
    the spec it parsed when this task's process loaded the DAG file, and the operator uses
    that one; without one, the pipelines file is read once, at the first use.

    :param pipeline: pipeline name in the pipelines file (templated).
    :param spec: the pipeline's parsed spec (None: read from ``pipelines_file`` when needed).
    :param pipelines_file: pipelines YAML path; None: ``EO_PIPELINES_FILE`` (templated).
    :param ledger_conn_id: PostgreSQL connection of the ledger.
    :param kafka_conn_id: Kafka connection (librdkafka settings in extra).
    """

    template_fields: Sequence[str] = ("pipeline", "pipelines_file")

    def __init__(
        self,
        *,
        pipeline: str,
        spec: PipelineSpec | None = None,
        pipelines_file: str | None = None,
        ledger_conn_id: str = DEFAULT_LEDGER_CONN_ID,
        kafka_conn_id: str = DEFAULT_KAFKA_CONN_ID,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pipeline = pipeline
        self.spec = spec
        self.pipelines_file = pipelines_file
        self.ledger_conn_id = ledger_conn_id
        self.kafka_conn_id = kafka_conn_id

    def pipeline_spec(self) -> PipelineSpec:
        """This task run's spec (the one given, else the file's, read once); raises
        ``PipelineConfigError`` naming file, pipeline and field."""
        if self.spec is None:
            self.spec = load_pipeline(self.pipeline, self.pipelines_file)
        return self.spec

    def epoch_protocol(self, context: Context) -> AbstractContextManager[EpochProtocol]:
        """The protocol over this operator's ledger and Kafka connections, acting as the
        running task instance (:func:`task_actor`): the epochs' history names it."""
        return open_protocol(self.ledger_conn_id, self.kafka_conn_id, task_actor(context))

    def check_kafka_client(self) -> None:
        """:func:`check_kafka_client` of this operator's Kafka connection."""
        check_kafka_client(self.kafka_conn_id)


def check_kafka_client(kafka_conn_id: str) -> None:
    """Resolve the Kafka connection's client settings now, before a step touches the ledger:
    raises ``KafkaFeatureMissing`` when the installed librdkafka cannot speak them
    (``ConnectionNotFound`` / ``ValueError`` for a missing or incomplete connection)."""
    EoKafkaHook(kafka_conn_id).settings  # noqa: B018 (resolving is the check)


@contextmanager
def open_protocol(
    ledger_conn_id: str, kafka_conn_id: str, actor: Actor | None = None
) -> Iterator[EpochProtocol]:
    """An :class:`EpochProtocol` over the two Airflow connections (Kafka is connected only
    if a call needs it, and its reads share one admin client until the block ends; a
    pipeline's dead-letter topic too) whose changes are recorded as ``actor``'s (None:
    the process's); the ledger is closed afterwards."""
    kafka = EoKafkaHook(kafka_conn_id)  # connects at its first call only
    with EoLedgerHook(ledger_conn_id).get_ledger() as ledger, kafka.one_admin_client():
        if actor is not None:
            ledger.actor = actor
        yield EpochProtocol(
            ledger,
            kafka=lambda: kafka,
            dead_letter_topics=kafka.dead_letter_topic,
        )
