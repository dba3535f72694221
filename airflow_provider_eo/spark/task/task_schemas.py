"""The Schema Registry side of one Spark task: its schema cache, and the schema id a bad record names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eo.config.specs import REGISTRY_FORMATS, MappingSpec
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.registry.wire_format import schema_id_of
from airflow_provider_eo.spark.records import KafkaRecord

if TYPE_CHECKING:
    from airflow_provider_eo.formats.registry.schema_cache import SchemaCache
    from airflow_provider_eo.formats.registry.settings import RegistrySettings


def registry_schema_id(mapping: MappingSpec, record: KafkaRecord) -> int | None:
    """The Schema Registry id a bad record names: its value's when the value format is a
    registry format and the value is framed, else its key's likewise; None otherwise."""
    for part, data, fmt in (
        ("value", record.value, mapping.value_format),
        ("key", record.key, mapping.key_format),
    ):
        if fmt in REGISTRY_FORMATS and data:
            try:
                return schema_id_of(data, part)
            except BadRecord:
                continue
    return None


def open_schema_cache(registry: RegistrySettings | None) -> SchemaCache | None:
    """The task's :class:`~airflow_provider_eo.formats.registry.schema_cache.SchemaCache`
    (None when the pipeline needs no registry); imported only then, so a JSON pipeline's
    executors never import the registry client."""
    if registry is None:
        return None
    from airflow_provider_eo.formats.registry.schema_cache import SchemaCache

    return SchemaCache.from_settings(registry)
