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
    """Paths of an Avro schema given as parsed JSON; ``named``: referenced named types by name.

    A type that refers to a record enclosing it (a recursive type) is an open prefix.
    """
    fields = SchemaFields()
    _Avro(fields, dict(named or {})).walk(schema, "", "", ())
    return fields


class _Avro:
    def __init__(self, fields: SchemaFields, named: dict[str, Any]) -> None:
        self.fields = fields
        self.named = named

    def walk(self, schema: Any, prefix: str, namespace: str, seen: tuple[str, ...]) -> None:
        if isinstance(schema, list):
            for branch in schema:
                self.walk(branch, prefix, namespace, seen)
        elif isinstance(schema, str):
            self.reference(schema, prefix, namespace, seen)
        elif isinstance(schema, dict):
            kind = schema.get("type")
            if isinstance(kind, (dict, list)):
                self.walk(kind, prefix, namespace, seen)
            elif kind in AVRO_CONTAINERS:
                self.fields.open_prefixes.add(prefix)
            elif "name" in schema:
                self.named_type(schema, prefix, namespace, seen)

    def reference(self, name: str, prefix: str, namespace: str, seen: tuple[str, ...]) -> None:
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        for candidate in (full, name):
            if candidate in seen:
                self.fields.open_prefixes.add(prefix)
                return
            if candidate in self.named:
                self.walk(self.named[candidate], prefix, namespace, seen)
                return

    def named_type(self, schema: dict[str, Any], prefix: str, namespace: str, seen: tuple[str, ...]) -> None:
        name = str(schema["name"])
        namespace = str(schema.get("namespace") or (name.rpartition(".")[0] if "." in name else namespace))
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        self.named.setdefault(full, schema)
        self.named.setdefault(name.rpartition(".")[2], schema)
        if schema.get("type") not in ("record", "error"):
            return
        for entry in schema.get("fields", []):
            path = self.fields.add(prefix, str(entry["name"]))
            self.walk(entry.get("type"), path, namespace, (*seen, full))


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
