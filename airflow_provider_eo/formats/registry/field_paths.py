"""The dotted field paths a registered schema declares (Avro, Protobuf, JSON Schema).

A path is the dotted chain of field names from the top-level value: ``customer.id``.
:class:`SchemaFields` holds the declared paths plus the "open" prefixes beneath which
any path may occur and the schema cannot say which: arrays and maps (elements are
reached by index or key: ``tags.0``, ``attributes.color``), Protobuf ``Struct``/``Value``,
and JSON Schema objects without ``properties`` or with a schema for
``additionalProperties``/``patternProperties``. Declared properties of a JSON Schema
object are taken as its fields even though JSON Schema allows undeclared ones by default.

* Avro: record fields, through nested records, unions (every non-null branch) and named
  types defined earlier in the schema or in its references (``named``).
* Protobuf: the fields of every top-level message of the file (a record may use any of
  them), through nested messages; well-known types (Timestamp, wrappers, Date, Decimal)
  are leaves. Recursive types stop where they recur.
* JSON Schema: ``properties``, through ``allOf``/``anyOf``/``oneOf`` and local ``$ref``
  (``#/...``); another ``$ref`` is open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import Descriptor, FileDescriptor

from airflow_provider_eo.formats.registry.protobuf_values import JSON_TYPES, WELL_KNOWN

AVRO_CONTAINERS = ("array", "map")


@dataclass
class SchemaFields:
    """Declared paths and open prefixes (``""`` open: any path)."""

    paths: set[str] = field(default_factory=set)
    open_prefixes: set[str] = field(default_factory=set)

    def has(self, path: str) -> bool:
        """True when ``path`` is declared, or lies beneath an open prefix."""
        if path in self.paths or "" in self.open_prefixes:
            return True
        return any(path.startswith(prefix + ".") for prefix in self.open_prefixes)

    def add(self, prefix: str, name: str) -> str:
        path = f"{prefix}.{name}" if prefix else name
        self.paths.add(path)
        return path


def avro_field_paths(schema: Any, named: Mapping[str, Any] | None = None) -> SchemaFields:
    """Paths of an Avro schema given as parsed JSON; ``named``: referenced named types by name."""
    fields = SchemaFields()
    _avro(schema, "", fields, dict(named or {}), ())
    return fields


def _avro(
    schema: Any, prefix: str, fields: SchemaFields, named: dict[str, Any], seen: tuple[str, ...]
) -> None:
    if isinstance(schema, list):
        for branch in schema:
            _avro(branch, prefix, fields, named, seen)
        return
    if isinstance(schema, str):
        if schema in named and schema not in seen:
            _avro(named[schema], prefix, fields, named, (*seen, schema))
        return
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if isinstance(kind, (dict, list)):
        _avro(kind, prefix, fields, named, seen)
        return
    if kind in AVRO_CONTAINERS:
        fields.open_prefixes.add(prefix)
        return
    if "name" in schema:
        name = str(schema["name"])
        namespace = schema.get("namespace")
        named.setdefault(name, schema)
        if namespace and "." not in name:
            named.setdefault(f"{namespace}.{name}", schema)
    if kind in ("record", "error"):
        for entry in schema.get("fields", []):
            path = fields.add(prefix, str(entry["name"]))
            _avro(entry.get("type"), path, fields, named, (*seen, str(schema.get("name"))))


def protobuf_field_paths(file: FileDescriptor) -> SchemaFields:
    """Paths of every top-level message of ``file`` (a descriptor loaded in a pool)."""
    fields = SchemaFields()
    for message in file.message_types_by_name.values():
        _protobuf(message, "", fields, ())
    return fields


def _protobuf(message: Descriptor, prefix: str, fields: SchemaFields, seen: tuple[str, ...]) -> None:
    for entry in message.fields:
        path = fields.add(prefix, entry.name)
        nested = entry.message_type
        if entry.is_repeated or nested is None:  # repeated and maps: open; scalars: leaves
            if entry.is_repeated:
                fields.open_prefixes.add(path)
            continue
        if nested.full_name in JSON_TYPES:
            fields.open_prefixes.add(path)
        elif nested.full_name not in WELL_KNOWN and nested.full_name not in seen:
            _protobuf(nested, path, fields, (*seen, message.full_name))


def json_schema_field_paths(schema: Any) -> SchemaFields:
    """Paths of a JSON Schema document (parsed JSON)."""
    fields = SchemaFields()
    _json(schema, "", fields, schema, ())
    return fields


def _json(node: Any, prefix: str, fields: SchemaFields, root: Any, seen: tuple[str, ...]) -> None:
    if node is True or node == {}:
        fields.open_prefixes.add(prefix)
        return
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _local_ref(root, ref)
        if target is None:
            fields.open_prefixes.add(prefix)
        elif ref not in seen:
            _json(target, prefix, fields, root, (*seen, ref))
    for keyword in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(keyword, []):
            _json(sub, prefix, fields, root, seen)
    kinds = node.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "array" in kinds or "items" in node:
        fields.open_prefixes.add(prefix)
    properties = node.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            _json(sub, fields.add(prefix, str(name)), fields, root, seen)
    elif "object" in kinds and not any(k in node for k in ("allOf", "anyOf", "oneOf", "$ref")):
        fields.open_prefixes.add(prefix)
    if isinstance(node.get("additionalProperties"), dict) or node.get("patternProperties"):
        fields.open_prefixes.add(prefix)


def _local_ref(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        return None
    node = root
    for token in filter(None, ref[1:].split("/")):
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or token not in node:
            return None
        node = node[token]
    return node
