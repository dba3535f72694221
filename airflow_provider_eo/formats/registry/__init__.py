"""Records in the Confluent wire format, decoded with schemas from a Schema Registry.

* :mod:`.wire_format`: magic byte, schema id, Protobuf message indexes;
* :mod:`.settings`: the registry connection -> :class:`RegistrySettings` -> client conf;
* :mod:`.schema_cache`: one registry fetch per schema id per task, counted;
* :mod:`.avro_decoder`, :mod:`.protobuf_decoder` (+ :mod:`.protobuf_values`),
  :mod:`.json_schema_decoder`: payload -> plain Python values;
* :mod:`.decoders`: :func:`registry_decoder` (format, part) -> decoder;
* :mod:`.field_paths`, :mod:`.field_check`: the mapping's field paths against every
  registered version of a subject, before any Spark job starts.

Import-light: ``settings`` (in every ``TaskSettings``) imports no confluent-kafka code;
the names below load their modules on first use (PEP 562), so a JSON pipeline never
imports fastavro, protobuf or the registry client.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

#: The registry client's HTTP library logs every request, URL included, at INFO: too loud
#: for task logs (one line per schema fetch), and a URL may carry credentials.
logging.getLogger("httpx2").setLevel(logging.WARNING)

_EXPORTS = {
    "REGISTRY_FORMATS": "settings",
    "registry_decoder": "decoders",
    "RegistryRefused": "registry_errors",
    "RegistryUnavailable": "registry_errors",
    "SchemaCache": "schema_cache",
    "RegistrySettings": "settings",
    "registry_settings": "settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
