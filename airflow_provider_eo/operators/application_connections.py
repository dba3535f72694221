"""The connections the write application gets: ledger, Kafka, HBase and, when needed, the registry.

Each travels as ``AIRFLOW_CONN_<ID>`` in the driver's environment, never on a command line
(:func:`connection_env`). The Schema Registry connection goes only to a pipeline whose key
or value format is avro, protobuf or json_schema. The application's arguments carry a
connection id only when it is not the application's default.
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from airflow_provider_eo.clients.connections import (
    DEFAULT_HBASE_CONN_ID,
    DEFAULT_KAFKA_CONN_ID,
    DEFAULT_LEDGER_CONN_ID,
    DEFAULT_SCHEMA_REGISTRY_CONN_ID,
    env_var_name,
)
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.formats.registry.settings import registry_formats


def connection_env(conn_ids: Sequence[str]) -> dict[str, str]:
    """``AIRFLOW_CONN_<ID>`` -> connection JSON for each id, resolved through Airflow.

    Raises whatever Airflow raises for an unknown connection id (it names the id).
    """
    return {env_var_name(cid): BaseHook.get_connection(cid).as_json() for cid in conn_ids}


def registry_connection_env(pipeline: str, spec: PipelineSpec, conn_id: str) -> dict[str, str]:
    """``{AIRFLOW_CONN_<ID>: connection JSON}`` of the registry when ``spec`` needs it, else {}.

    Raises :class:`ConfigError` naming the pipeline, the format and the connection id when
    Airflow does not know the connection.
    """
    formats = registry_formats(spec.mapping)
    if not formats:
        return {}
    try:
        connection = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException as exc:
        needs = ", ".join(f"{part}_format {fmt}" for part, fmt in formats.items())
        raise ConfigError(
            f"pipeline {pipeline}: {needs} needs the Schema Registry connection {conn_id!r}: {exc}"
        ) from None
    return {env_var_name(conn_id): connection.as_json()}


def check_registered_fields(spec: PipelineSpec, conn_id: str) -> list[str]:
    """Before spark-submit: every field ``spec``'s mapping names is in a registered schema
    (``EoSchemaRegistryHook.check_mapping``); nothing to check for plain formats.

    Returns the subjects not checked (nothing registered yet). Raises
    ``PipelineConfigError`` for a field no registered schema has, RegistryUnavailable /
    RegistryRefused when the registry does not answer (a retryable task failure).
    """
    if not registry_formats(spec.mapping):
        return []
    from airflow_provider_eo.hooks.schema_registry import EoSchemaRegistryHook

    return EoSchemaRegistryHook(conn_id).check_mapping(spec)


def conn_id_args(
    ledger_conn_id: str,
    kafka_conn_id: str,
    hbase_conn_id: str,
    schema_registry_conn_id: str,
    spec: PipelineSpec,
) -> list[str]:
    """``--<name>-conn-id ID`` for every connection id that is not the application's default
    (the registry's only when ``spec`` needs it; ids only, the definitions travel in the
    environment)."""
    ids = [
        ("--ledger-conn-id", ledger_conn_id, DEFAULT_LEDGER_CONN_ID),
        ("--kafka-conn-id", kafka_conn_id, DEFAULT_KAFKA_CONN_ID),
        ("--hbase-conn-id", hbase_conn_id, DEFAULT_HBASE_CONN_ID),
    ]
    if registry_formats(spec.mapping):
        ids.append(("--schema-registry-conn-id", schema_registry_conn_id, DEFAULT_SCHEMA_REGISTRY_CONN_ID))
    return [arg for flag, conn_id, default in ids if conn_id != default for arg in (flag, conn_id)]
