"""Schema Registry hook: the registry connection inside Airflow, for checks before Spark runs.

The connection (rules in :mod:`airflow_provider_eo.formats.registry.settings`): an
``http``/``https`` style connection, host/port and the path of the Confluent-compatible
API (``/apis/ccompat/v7`` on Apicurio), login/password for basic auth, TLS files in
``extra``. The Spark tasks resolve the same connection from their driver's environment.
"""

from __future__ import annotations

from confluent_kafka.schema_registry import SchemaRegistryClient

from airflow_provider_eo.clients.connections import DEFAULT_SCHEMA_REGISTRY_CONN_ID
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.formats.registry.field_check import (
    KEY_PREFIX,
    check_fields_registered,
    subject_fields,
)
from airflow_provider_eo.formats.registry.field_paths import SchemaFields
from airflow_provider_eo.formats.registry.settings import RegistrySettings, registry_settings
from airflow_provider_eo.hooks.base import EoHook


class EoSchemaRegistryHook(EoHook):
    """confluent-kafka ``SchemaRegistryClient`` from a ``schema_registry`` connection.

    :param schema_registry_conn_id: connection id (default ``schema_registry``); any
        conn_type is accepted.
    """

    conn_name_attr = "schema_registry_conn_id"
    default_conn_name = DEFAULT_SCHEMA_REGISTRY_CONN_ID
    conn_type = "eo_schema_registry"
    hook_name = "EO Schema Registry (Confluent-compatible API)"

    def __init__(self, schema_registry_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.schema_registry_conn_id = schema_registry_conn_id
        self._settings: RegistrySettings | None = None

    @property
    def settings(self) -> RegistrySettings:
        """The registry's settings, resolved once (``repr`` hides the secrets)."""
        if self._settings is None:
            self._settings = registry_settings(self.eo_connection(self.schema_registry_conn_id))
        return self._settings

    def get_conn(self) -> SchemaRegistryClient:
        """A new client; the caller closes it (``client.close()``)."""
        return SchemaRegistryClient(self.settings.client_conf())

    def registered_field_paths(self, subject: str) -> dict[int, SchemaFields]:
        """``version -> fields`` of every registered version of ``subject`` ({} when none).

        Raises RegistryUnavailable / RegistryRefused when the registry does not answer.
        """
        client = self.get_conn()
        try:
            return subject_fields(client, subject, self.settings.where)
        finally:
            client.close()

    def latest_field_paths(self, subject: str) -> SchemaFields | None:
        """The fields of the latest registered version of ``subject`` (None when none)."""
        versions = self.registered_field_paths(subject)
        return versions[max(versions)] if versions else None

    def check_mapping(self, spec: PipelineSpec) -> list[str]:
        """Check that every field ``spec``'s mapping names is in a registered schema of its
        topics' subjects (``formats.registry.field_check``), before any Spark job starts.

        Returns the subjects not checked because nothing is registered under them yet (a
        ``topic_pattern`` pipeline's topics are not known here: nothing is checked). Raises
        ``PipelineConfigError`` naming the pipeline, the field, the subject and the versions
        checked; RegistryUnavailable / RegistryRefused when the registry does not answer.
        """
        mapping = spec.mapping
        paths = [*mapping.value_paths, *(KEY_PREFIX + path for path in mapping.key_paths)]
        if not paths or not spec.topics:
            return []
        client = self.get_conn()
        try:
            return check_fields_registered(
                spec.name,
                paths,
                spec.topics,
                client,
                file=spec.source_file or "pipeline spec",
                registry=self.settings.where,
            )
        finally:
            client.close()

    def test_connection(self) -> tuple[bool, str]:
        """(True, summary) when the registry lists its subjects, else (False, error)."""
        client = self.get_conn()
        try:
            subjects = client.get_subjects()
        except Exception as exc:
            return False, f"Schema Registry {self.settings.where} failed: {type(exc).__name__}: {exc}"
        finally:
            client.close()
        return True, f"Connected: {len(subjects)} subject(s) registered"
