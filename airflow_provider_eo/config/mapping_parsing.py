"""Validation of a pipeline's ``mapping`` section into a :class:`MappingSpec`.

Every problem raises ``PipelineConfigError`` naming the file, the pipeline and the field
(``mapping.columns.total``, ``mapping.flatten[1]``...). The grammars of paths, templates,
prefixes and version sources are :mod:`airflow_provider_eo.config.mapping_syntax`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from airflow_provider_eo.config.mapping_syntax import (
    parse_path,
    parse_positions,
    parse_prefix,
    parse_template,
    parse_tombstone_version,
    parse_version,
)
from airflow_provider_eo.config.section import CONTROL_CHARS, Section
from airflow_provider_eo.config.specs import ENVELOPE_METADATA_FIELDS, METADATA_FIELDS, MappingSpec

ENVELOPES = ("none", "debezium")
TRUNCATE_POLICIES = ("fail", "ignore")
VALUE_FORMATS = ("json", "string", "bytes", "avro", "protobuf", "json_schema")
KEY_FORMATS = ("bytes", "string", "json", "avro", "protobuf", "json_schema")
#: Key formats that decode to records, so ``{key.<path>}`` can reach a field.
STRUCTURED_KEY_FORMATS = ("json", "avro", "protobuf", "json_schema")
FUNCTION_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def parse_mapping(section: Section) -> MappingSpec:
    """The ``mapping`` section of one pipeline, every field checked (unknown keys rejected)."""
    key_format = section.choice("key_format", KEY_FORMATS, "bytes")
    row_key = section.string("row_key", "kafka_key")
    if row_key != "kafka_key":
        _check_template(section, row_key, key_format)
    prefix = section.string("row_key_prefix", None)
    if prefix is not None:
        try:
            parse_prefix(prefix)
        except ValueError as exc:
            section.fail("row_key_prefix", str(exc))
    function = section.string("function", None)
    if function is not None and not FUNCTION_RE.fullmatch(function):
        section.fail("function", f"must be an importable 'package.module:function' path, got {function!r}")
    columns = _columns(section)
    flatten = _flatten(section, columns)
    envelope = section.choice("envelope", ENVELOPES, "none")
    options = section.child("envelope_options")
    truncate = options.choice("truncate", TRUNCATE_POLICIES, "fail")
    options.finish()
    if envelope == "none" and options.raw("truncate", None) is not None:
        section.fail("envelope_options", "applies with 'envelope: debezium' only")
    spec = MappingSpec(
        value_format=section.choice("value_format", VALUE_FORMATS, "json"),
        key_format=key_format,
        row_key=row_key,
        row_key_prefix=prefix,
        columns=columns,
        flatten=flatten,
        metadata_columns=_metadata_columns(section, columns, envelope),
        version=_version(section, envelope),
        function=function,
        max_record_bytes=section.integer("max_record_bytes", 1_048_576),
        envelope=envelope,
        truncate=truncate,
        tombstone_version=_tombstone_version(section, envelope, key_format),
    )
    if function is not None:
        _check_function_alone(section, spec)
    section.finish()
    return spec


def _check_template(section: Section, template: str, key_format: str) -> None:
    try:
        parts = parse_template(template)
    except ValueError as exc:
        section.fail("row_key", str(exc))
    for _, field in parts:
        if field is not None and field[0] == "key" and field[1] and key_format not in STRUCTURED_KEY_FORMATS:
            section.fail(
                "row_key",
                f"names a field of the Kafka key ({{key.{'.'.join(field[1])}}}) but key_format "
                f"{key_format!r} has no fields (use json, avro, protobuf or json_schema)",
            )


def _qualifier(section: Section, key: str, qualifier: Any) -> str:
    if not isinstance(qualifier, str) or not qualifier.strip() or CONTROL_CHARS.search(qualifier):
        section.fail(
            key, f"qualifiers must be non-empty strings without control characters, got {qualifier!r}"
        )
    return qualifier


def _columns(section: Section) -> dict[str, str] | None:
    raw = section.raw("columns", None)
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not raw:
        section.fail("columns", f"must map qualifiers to dotted field paths, got {raw!r}")
    columns: dict[str, str] = {}
    for qualifier, path in raw.items():
        _qualifier(section, "columns", qualifier)
        if not isinstance(path, str):
            section.fail(f"columns.{qualifier}", f"must be a dotted field path, got {path!r}")
        try:
            parse_path(path)
        except ValueError as exc:
            section.fail(f"columns.{qualifier}", str(exc))
        columns[qualifier] = path
    return columns


def _flatten(section: Section, columns: dict[str, str] | None) -> tuple[str, ...]:
    raw = section.raw("flatten", [])
    if not isinstance(raw, list):
        section.fail("flatten", f"must be a list of dotted field paths, got {raw!r}")
    for index, path in enumerate(raw):
        key = f"flatten[{index}]"
        if not isinstance(path, str):
            section.fail(key, f"must be a dotted field path, got {path!r}")
        try:
            segments = parse_path(path)
        except ValueError as exc:
            section.fail(key, str(exc))
        if columns is None and len(segments) > 1:
            section.fail(key, f"{path!r} is nested: without 'columns' only top-level fields are cells")
        if columns is not None and path not in columns.values():
            section.fail(key, f"{path!r} is not a path of 'columns' (flatten names the paths of columns)")
    if len(set(raw)) != len(raw):
        section.fail("flatten", "lists a path more than once")
    return tuple(raw)


def _is_envelope_metadata(name: Any) -> bool:
    """``op``, ``source`` or ``source.<path>``."""
    if name in ENVELOPE_METADATA_FIELDS:
        return True
    if not isinstance(name, str) or not name.startswith("source."):
        return False
    try:
        parse_path(name)
    except ValueError:
        return False
    return True


def _metadata_columns(section: Section, columns: dict[str, str] | None, envelope: str) -> dict[str, str]:
    raw = section.raw("metadata_columns", {})
    if not isinstance(raw, Mapping):
        section.fail("metadata_columns", f"must map {', '.join(METADATA_FIELDS)} to qualifiers, got {raw!r}")
    metadata: dict[str, str] = {}
    allowed = ", ".join(METADATA_FIELDS)
    if envelope == "debezium":
        allowed += ", op, source, source.<path>"
    for name, qualifier in raw.items():
        key = f"metadata_columns.{name}"
        if name not in METADATA_FIELDS and not (envelope == "debezium" and _is_envelope_metadata(name)):
            section.fail(key, f"is not Kafka metadata (allowed: {allowed})")
        _qualifier(section, key, qualifier)
        if qualifier in metadata.values():
            section.fail(key, f"qualifier {qualifier!r} is already a metadata column")
        if columns is not None and qualifier in columns:
            section.fail(key, f"qualifier {qualifier!r} is also in 'columns'")
        metadata[name] = qualifier
    return metadata


def _version(section: Section, envelope: str) -> str:
    version = section.string("version", "offset")
    try:
        (parse_positions if envelope == "debezium" else parse_version)(version)
    except ValueError as exc:
        section.fail("version", str(exc))
    return version


def _tombstone_version(section: Section, envelope: str, key_format: str) -> str | None:
    """``tombstone_version``: plain mappings under ``version: field:...`` only."""
    text = section.string("tombstone_version", None)
    if text is None:
        return None
    if envelope != "none":
        section.fail(
            "tombstone_version", "does not apply with an envelope (a delete event carries its version)"
        )
    if not section.raw("version", "offset").startswith("field:"):
        section.fail("tombstone_version", "applies with 'version: field:<path>' only")
    try:
        kind, _ = parse_tombstone_version(text)
    except ValueError as exc:
        section.fail("tombstone_version", str(exc))
    if kind == "key" and key_format not in STRUCTURED_KEY_FORMATS:
        section.fail(
            "tombstone_version",
            f"names a field of the Kafka key but key_format {key_format!r} has no fields "
            "(use json, avro, protobuf or json_schema)",
        )
    return text


def _check_function_alone(section: Section, spec: MappingSpec) -> None:
    """A user function maps the raw record itself: value_format, columns and flatten do not apply."""
    if spec.value_format != "json" and spec.envelope == "none":
        section.fail("value_format", "does not apply with 'function' (the function reads the raw record)")
    if spec.columns is not None:
        section.fail("columns", "does not apply with 'function' (the function returns the cells)")
    if spec.flatten:
        section.fail("flatten", "does not apply with 'function' (the function returns the cells)")
