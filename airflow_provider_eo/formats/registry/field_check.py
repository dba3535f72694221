"""Before any Spark job: every field the mapping names exists in a registered schema.

Subjects follow the TopicNameStrategy: ``<topic>-value`` for value paths, ``<topic>-key``
for key paths (a mapping path ``key.<path>``; ``key`` alone names the whole key and is not
checked). For each topic of the pipeline, each path must be declared by *some*
registered version of the subject (records of any version may still be in the topic),
as :class:`~airflow_provider_eo.formats.registry.field_paths.SchemaFields` reads it.
A subject with no registered version yet (404) cannot be checked and is returned as
skipped. Otherwise a missing path raises ``PipelineConfigError`` naming the pipeline, the
path, the subject and the versions checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka.schema_registry import RegisteredSchema, SchemaRegistryClient
from confluent_kafka.schema_registry._sync.avro import _resolve_named_schema as _avro_named

from airflow_provider_eo.config.config_errors import PipelineConfigError
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.registry.field_paths import (
    SchemaFields,
    avro_field_paths,
    json_schema_field_paths,
    protobuf_field_paths,
)
from airflow_provider_eo.formats.registry.protobuf_decoder import load_descriptors
from airflow_provider_eo.formats.registry.registry_errors import RegistryNotFound, registry_call

KEY_PREFIX = "key."


def subject_fields(client: SchemaRegistryClient, subject: str, registry: str = "") -> dict[int, SchemaFields]:
    """``version -> SchemaFields`` for every registered version of ``subject`` ({} when none).

    Raises RegistryUnavailable / RegistryRefused, and ``ValueError`` for a schema whose
    fields cannot be read (e.g. a Protobuf schema whose ``.proto`` text does not compile).
    """
    try:
        versions = registry_call(registry, f"versions of {subject!r}", lambda: client.get_versions(subject))
    except RegistryNotFound:
        return {}
    return {int(v): registered_fields(client, subject, int(v), registry) for v in versions}


def registered_fields(
    client: SchemaRegistryClient, subject: str, version: int, registry: str = ""
) -> SchemaFields:
    """The fields of ``subject`` version ``version`` (see :func:`subject_fields` for errors).

    A Protobuf schema is asked with ``format=serialized``: a base64 descriptor is loaded as
    it is, ``.proto`` source text (what Apicurio returns for a text-registered schema) is
    compiled (:func:`~airflow_provider_eo.formats.registry.protobuf_decoder.load_descriptors`).
    """
    what = f"subject {subject!r} version {version}"
    found: RegisteredSchema = registry_call(registry, what, lambda: client.get_version(subject, version))
    kind = found.schema.schema_type or "AVRO"
    if kind == "PROTOBUF":
        serialized = registry_call(
            registry, what, lambda: client.get_version(subject, version, fmt="serialized")
        )
        try:
            pool, file_proto = load_descriptors(serialized.schema, client, what)
        except BadRecord as bad:
            raise ValueError(bad.reason) from None
        return protobuf_field_paths(pool.FindFileByName(file_proto.name))
    document: Any = json.loads(found.schema.schema_str or "null")
    if kind == "JSON":
        return json_schema_field_paths(document)
    return avro_field_paths(document, _avro_named(found.schema, client))


def split_paths(paths: Iterable[str]) -> dict[str, list[str]]:
    """``{"value": [...], "key": [...]}``: ``key.<p>`` paths become ``<p>`` under ``key``."""
    parts: dict[str, list[str]] = {"value": [], "key": []}
    for path in dict.fromkeys(paths):
        if path.startswith(KEY_PREFIX):
            parts["key"].append(path[len(KEY_PREFIX) :])
        elif path != "key":
            parts["value"].append(path)
    return parts


def check_fields_registered(
    pipeline: str,
    paths: Iterable[str],
    topics: Sequence[str],
    client: SchemaRegistryClient,
    *,
    file: str = "pipeline spec",
    registry: str = "",
) -> list[str]:
    """Check ``paths`` against ``<topic>-value`` / ``<topic>-key`` of every topic (module docstring).

    Returns the subjects skipped because nothing is registered under them yet. Raises
    ``PipelineConfigError`` listing every missing path, RegistryUnavailable /
    RegistryRefused when the registry does not answer.
    """
    skipped: list[str] = []
    problems: list[str] = []
    for part, part_paths in split_paths(paths).items():
        if not part_paths:
            continue
        for topic in topics:
            subject = f"{topic}-{part}"
            try:
                versions = subject_fields(client, subject, registry)
            except ValueError as exc:
                raise PipelineConfigError(file, pipeline, "mapping", f"subject {subject!r}: {exc}") from None
            if not versions:
                skipped.append(subject)
                continue
            checked = ", ".join(str(v) for v in sorted(versions))
            for path in part_paths:
                if not any(fields.has(path) for fields in versions.values()):
                    shown = f"{KEY_PREFIX}{path}" if part == "key" else path
                    problems.append(
                        f"field {shown!r} is in no registered schema of subject {subject!r} "
                        f"(versions checked: {checked})"
                    )
    if problems:
        raise PipelineConfigError(file, pipeline, "mapping", "; ".join(problems))
    return skipped
