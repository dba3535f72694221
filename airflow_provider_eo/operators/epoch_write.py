"""EpochWriteOperator: what the write step's operators share, in either ``spark.mode``.

The stream DAG's write task is :class:`~airflow_provider_eo.operators.write.WriteEpochOperator`
(a ``SparkSubmitOperator``: ``spark.mode: submit``) or
:class:`~airflow_provider_eo.operators.session_write_operator.SessionWriteEpochOperator`
(``spark.mode: session``, which never imports the Spark provider's ``spark_submit`` module:
it is not loaded when a task parses a session pipeline's DAG). Both derive from this class:
the epoch and the connections the write is handed, the driver's environment, the session
write (:mod:`.session_write`) and its kill, the "Epoch" extra link and the lineage of the
written epoch. Nothing here connects anywhere before ``execute``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from airflow_provider_eo.clients.connections import (
    DEFAULT_HBASE_CONN_ID,
    DEFAULT_KAFKA_CONN_ID,
    DEFAULT_LEDGER_CONN_ID,
    DEFAULT_SCHEMA_REGISTRY_CONN_ID,
)
from airflow_provider_eo.config.loader import PIPELINE_SPEC_ENV
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.lineage.operator_lineage import epoch_after_write, epoch_lineage
from airflow_provider_eo.operators.application_connections import connection_env, registry_connection_env
from airflow_provider_eo.operators.epoch_link import EpochPageLink
from airflow_provider_eo.operators.session_write import SessionWrite


class EpochWriteOperator(BaseOperator):
    """Base of the write operators: one epoch of one pipeline, written with Spark.

    :param pipeline: pipeline name (as declared in the pipelines YAML).
    :param epoch_id: the epoch to write (templated; usually pulled from the reserve task's XCom;
        None only for a subclass that reserves the epoch itself in ``execute``).
    :param fencing_token: the token the reserve task returned (templated); the write refuses
        an epoch whose token differs, and treats an epoch already voted under this token as
        done (a retry of this task).
    :param spec: the pipeline spec; the write gets it (``EO_PIPELINE_SPEC``) and never reads
        the YAML.
    :param pipelines_file: the YAML the spec came from (None: ``EO_PIPELINES_FILE``), named in
        the log.
    :param ledger_conn_id / kafka_conn_id / hbase_conn_id: connections handed to the write.
    :param schema_registry_conn_id: the Schema Registry connection, handed to the write only
        when the pipeline's key or value format is avro, protobuf or json_schema.

    Other keywords go to the next base class (``BaseOperator``'s, or ``SparkSubmitOperator``'s
    for :class:`~airflow_provider_eo.operators.write.WriteEpochOperator`).
    """

    template_fields: Sequence[str] = ("epoch_id", "fencing_token")
    ui_color = "#f0e4ff"
    operator_extra_links = (EpochPageLink(),)  # "Epoch": the epoch's page (operators/epoch_link.py)

    def __init__(
        self,
        *,
        pipeline: str,
        epoch_id: str | int | None = None,
        fencing_token: str | None = None,
        spec: PipelineSpec,
        pipelines_file: str | None = None,
        ledger_conn_id: str = DEFAULT_LEDGER_CONN_ID,
        kafka_conn_id: str = DEFAULT_KAFKA_CONN_ID,
        hbase_conn_id: str = DEFAULT_HBASE_CONN_ID,
        schema_registry_conn_id: str = DEFAULT_SCHEMA_REGISTRY_CONN_ID,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pipeline = pipeline
        self.epoch_id = epoch_id
        self.fencing_token = fencing_token
        self.spec = spec
        self.pipelines_file = pipelines_file
        self.ledger_conn_id = ledger_conn_id
        self.kafka_conn_id = kafka_conn_id
        self.hbase_conn_id = hbase_conn_id
        self.schema_registry_conn_id = schema_registry_conn_id
        self.lineage_epoch: Epoch | None = None  # what get_openlineage_facets_on_complete reports
        self.session_write: SessionWrite | None = None  # the last session-mode write's (on_kill)

    def application_env(self) -> dict[str, str]:
        """What the write's driver gets in its environment: the connections
        (``AIRFLOW_CONN_*``, secrets) and this run's spec (``EO_PIPELINE_SPEC``)."""
        conn_ids = (self.ledger_conn_id, self.kafka_conn_id, self.hbase_conn_id)
        return {
            **connection_env(conn_ids),
            **registry_connection_env(self.pipeline, self.spec, self.schema_registry_conn_id),
            PIPELINE_SPEC_ENV: json.dumps(self.spec.to_dict()),
        }

    def epoch_to_write(self) -> int:
        """The epoch id as rendered; ``ConfigError`` when none was given."""
        if self.epoch_id is None:
            raise ConfigError(f"pipeline {self.pipeline}: no epoch to write (epoch_id is None)")
        return int(str(self.epoch_id))

    def write_epoch_on_session(self, context: Any) -> None:
        """The whole session-mode write of ``epoch_id``: its connections resolved (a missing
        one fails first), :meth:`write_on_session`, then the epoch read for the lineage."""
        epoch_id = self.epoch_to_write()
        self.write_on_session(context, self.application_env())
        self.lineage_epoch = epoch_after_write(self.ledger_conn_id, epoch_id)

    def write_on_session(self, context: Any, env: dict[str, str]) -> None:
        """Session mode (:mod:`.session_write`): write and vote the epoch as one job on the
        Spark Connect server of ``spec.spark.connect_conn_id``; raises ``SessionWriteFailed``
        unless the epoch ends voted under this task's fencing token."""
        conn_ids = {
            "ledger_conn_id": self.ledger_conn_id,
            "kafka_conn_id": self.kafka_conn_id,
            "hbase_conn_id": self.hbase_conn_id,
            "schema_registry_conn_id": self.schema_registry_conn_id,
        }
        self.log.info(
            "Writing epoch: pipeline=%s epoch_id=%s mode=session connection=%s",
            self.pipeline, self.epoch_id, self.spec.spark.connect_conn_id,
        )  # fmt: skip
        self.session_write = SessionWrite(self.spec, int(str(self.epoch_id)), self.fencing_token, conn_ids)
        self.session_write.run(context, env)

    def on_kill(self) -> None:
        """Interrupt the try's Spark Connect job by its tag (nothing when none started)."""
        if self.session_write is not None:
            self.session_write.interrupt()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage (``apache-airflow-providers-openlineage``): the topics the epoch read, the
        table it wrote and its ``eo_epoch`` facet as the write left it (docs/lineage.md)."""
        return epoch_lineage(
            self.lineage_epoch, self.spec, kafka_conn_id=self.kafka_conn_id, hbase_conn_id=self.hbase_conn_id
        )
