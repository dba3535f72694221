"""``registry_decoder``: the decoder of a registry format for one part of a record.

A decoder is ``decode(data: bytes) -> Any``: it parses the Confluent wire format, gets
the writer schema through the task's :class:`SchemaCache` (one fetch per schema id) and
returns plain Python values. It raises:

* :class:`BadRecord` (reason names the part, the format and the schema id when known):
  no magic byte, a truncated header, an id unknown to the registry, a schema of another
  format, a payload that does not decode;
* :class:`RegistryUnavailable` / :class:`RegistryRefused`: the registry did not answer
  with the schema (never a bad record: the task fails, Airflow retries).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_provider_eo.formats.registry.settings import REGISTRY_FORMATS

if TYPE_CHECKING:
    from airflow_provider_eo.formats.field_selection import FieldSelection
    from airflow_provider_eo.formats.registry.schema_cache import SchemaCache

PARTS = ("value", "key")

#: format -> (module, class): each decoder's module is imported only for its format, so an
#: Avro task never imports jsonschema or protobuf (about 0.35 s of CPU per Python worker).
_DECODERS = {
    "avro": ("avro_decoder", "AvroDecoder"),
    "protobuf": ("protobuf_decoder", "ProtobufDecoder"),
    "json_schema": ("json_schema_decoder", "JsonSchemaDecoder"),
}


def registry_decoder(
    fmt: str, part: str, cache: SchemaCache, fields: FieldSelection = None
) -> Callable[[bytes], Any]:
    """The decoder of ``fmt`` (avro | protobuf | json_schema) for ``part`` (value | key);
    ``fields``: what the caller reaches of the values (the Avro decoder leaves out the rest).

    Raises ``ValueError`` for another format or part.
    """
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    where = _DECODERS.get(fmt)
    if where is None:
        raise ValueError(f"{part} format {fmt!r} is not a registry format ({', '.join(REGISTRY_FORMATS)})")
    module, name = where
    factory = getattr(importlib.import_module(f"airflow_provider_eo.formats.registry.{module}"), name)
    if fmt == "avro":
        return factory(part, cache, fields)
    return factory(part, cache)
