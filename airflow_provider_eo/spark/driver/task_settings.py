"""Driver-side resolution of everything the write application needs.

Pipelines: ``--pipelines-file PATH``, else the parsed spec in ``EO_PIPELINE_SPEC`` (set by
``WriteEpochOperator``: the spec its task run uses, so the driver never reads the YAML
again, and a cluster-mode driver needs no DAG folder), else the file named by
``EO_PIPELINES_FILE``.

Connections: ``AIRFLOW_CONN_<ID>`` environment variables (the Schema Registry's only
for a pipeline whose key or value format is avro, protobuf or json_schema) of the driver (URI or
JSON form, resolved by ``clients.connections``). Values are secrets: they are
placed in :class:`TaskSettings` (repr hides them) and never logged.
"""

from __future__ import annotations

import json
import os

from airflow_provider_eo import config
from airflow_provider_eo.clients.connection_settings import (
    hbase_connection_kwargs,
    hbase_endpoints,
    kafka_client_config,
    postgres_dsn,
)
from airflow_provider_eo.clients.connections import (
    DEFAULT_HBASE_CONN_ID,
    DEFAULT_KAFKA_CONN_ID,
    DEFAULT_LEDGER_CONN_ID,
    DEFAULT_SCHEMA_REGISTRY_CONN_ID,
    ConnectionNotFound,
    connection_from_env,
)
from airflow_provider_eo.config import PipelineNotDeclared, PipelineSpec
from airflow_provider_eo.config.loader import PIPELINE_SPEC_ENV
from airflow_provider_eo.config.size_limits import check_consumer_sizes
from airflow_provider_eo.formats.registry.settings import (
    RegistrySettings,
    registry_formats,
    registry_settings,
)
from airflow_provider_eo.spark.task.write_task import TaskSettings


def run_pipeline_spec(name: str, pipelines_file: str | None = None) -> PipelineSpec:
    """The named pipeline's spec (resolution order in the module docstring).

    Raises ``PipelineNotDeclared`` (the file is ``$EO_PIPELINE_SPEC`` when that spec is
    another pipeline's) or ``PipelineConfigError``, as
    :func:`airflow_provider_eo.config.load_pipeline`.
    """
    shipped = os.environ.get(PIPELINE_SPEC_ENV)
    if pipelines_file is None and shipped:
        spec = PipelineSpec.from_dict(json.loads(shipped))
        if spec.name != name:
            raise PipelineNotDeclared(f"${PIPELINE_SPEC_ENV}", name, [spec.name])
        return spec
    return config.load_pipeline(name, pipelines_file)


def ledger_dsn_from_env(ledger_conn_id: str) -> str:
    """libpq DSN of the ledger connection (contains the password: never log it)."""
    return postgres_dsn(connection_from_env(ledger_conn_id))


def schema_registry_from_env(spec: PipelineSpec, conn_id: str) -> RegistrySettings | None:
    """The registry settings when ``spec``'s key or value format needs them (else None).

    Raises ``ConnectionNotFound`` naming the connection id, the pipeline and the format
    when the connection is missing (the application then exits with code 2).
    """
    formats = registry_formats(spec.mapping)
    if not formats:
        return None
    try:
        return registry_settings(connection_from_env(conn_id))
    except ConnectionNotFound as exc:
        needs = ", ".join(f"{part}_format {fmt}" for part, fmt in formats.items())
        raise ConnectionNotFound(
            f"pipeline {spec.name!r}: {needs} needs the Schema Registry connection {conn_id!r}: {exc}"
        ) from None


def task_settings(
    spec: PipelineSpec,
    epoch_id: int,
    *,
    ledger_conn_id: str = DEFAULT_LEDGER_CONN_ID,
    kafka_conn_id: str = DEFAULT_KAFKA_CONN_ID,
    hbase_conn_id: str = DEFAULT_HBASE_CONN_ID,
    schema_registry_conn_id: str = DEFAULT_SCHEMA_REGISTRY_CONN_ID,
) -> TaskSettings:
    """Settings shipped to every task of the epoch, connections resolved from the environment.

    Raises ``PipelineConfigError`` when the Kafka connection's fetch sizes cannot carry a
    record of ``mapping.max_record_bytes`` (``config.size_limits.check_consumer_sizes``), and
    ``ConnectionNotFound`` for a missing connection (the registry's only when a format needs it),
    ``ValueError`` for a bad HBase connection setting (``extra.servers`` among them).
    """
    kafka = kafka_client_config(connection_from_env(kafka_conn_id))
    check_consumer_sizes(spec, kafka.config)
    hbase = connection_from_env(hbase_conn_id)
    return TaskSettings(
        pipeline=spec.name,
        epoch_id=epoch_id,
        hbase_table=spec.hbase_table,
        column_family=spec.column_family,
        mapping=spec.mapping,
        bad_records=spec.bad_records,
        batch_size=spec.batch_size,
        batch_bytes=spec.batch_bytes,
        hbase_keyvalue_maxsize=spec.hbase_keyvalue_maxsize,
        read_timeout_s=kafka.timeout_s,
        kafka_config=kafka.config,
        hbase_kwargs=hbase_connection_kwargs(hbase),
        hbase_servers=hbase_endpoints(hbase),
        hbase_conn_id=hbase_conn_id,
        ledger_dsn=ledger_dsn_from_env(ledger_conn_id),
        schema_registry=schema_registry_from_env(spec, schema_registry_conn_id),
        split_size=spec.spark.split_size,
    )
