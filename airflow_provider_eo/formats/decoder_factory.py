"""The decoder of a pipeline's ``value_format`` or ``key_format``.

Plain formats (json, string, bytes) come from :mod:`.plain`; Schema Registry formats
(avro, protobuf, json_schema) from ``.registry``, imported only for them, so a plain
pipeline never loads the registry client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eo.formats.plain import Decoder, plain_decoder

if TYPE_CHECKING:
    from airflow_provider_eo.formats.field_selection import FieldSelection
    from airflow_provider_eo.formats.registry.schema_cache import SchemaCache

PLAIN_FORMATS = ("json", "string", "bytes")


def build_decoder(
    fmt: str, part: str, schema_cache: SchemaCache | None, fields: FieldSelection = None
) -> Decoder:
    """``decode(data: bytes) -> Any`` for ``fmt`` and ``part`` (``"value"`` or ``"key"``).

    ``fields`` (``formats.field_selection``; None: all) is what the caller can reach of the
    decoded values: a decoder may leave out the rest (the Avro one does).

    ``schema_cache`` is the task's registry client (``formats.registry.SchemaCache``),
    used by registry formats only (None is fine for plain ones). Raises ValueError for an
    unknown format, or for a registry format without a schema cache.
    """
    if fmt in PLAIN_FORMATS:
        return plain_decoder(fmt, part)
    if schema_cache is None:
        raise ValueError(
            f"{part}_format {fmt!r} needs the Schema Registry, and the task has no registry client"
        )
    from airflow_provider_eo.formats.registry import registry_decoder

    return registry_decoder(fmt, part, schema_cache, fields)
