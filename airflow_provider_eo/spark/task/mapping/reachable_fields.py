"""The fields of a record's value a declarative mapping can reach, as a field selection.

:func:`value_fields` is what the write task hands the value decoder
(``formats.field_selection``): a decoder may then leave out everything else, and the
mapping's output (cells, row keys, versions, deletes, bad-record reasons) is the same as
from the whole value. What is kept:

* a user function (``mapping.function``) sees the whole record: everything (None);
* no envelope: with ``columns: null`` every top-level field is a cell: everything; with
  ``columns``, their paths, the row-key template's value fields and the version field;
* ``envelope: debezium``, paths into the envelope: ``op``; ``after`` whole under ``columns:
  null``, else the columns' and the template's value fields inside it; inside ``before`` (the
  row key of a delete) the template's value fields, nothing without any; the version paths
  (``source.lsn``); the envelope metadata columns (``source``, ``source.<path>``, ``op``);
  ``source``'s ``db``, ``schema``, ``table`` and ``collection``, which bad-record reasons
  name. Every other top-level field of the envelope is kept with nothing inside it
  (:data:`~airflow_provider_eo.formats.field_selection.OTHER_FIELDS`): the envelope keeps its
  set of keys, which decides whether it is a JSON schema wrapper (``{schema, payload}``).

Each kept path keeps its node whole (a column ``after.device`` writes all of ``device``).
"""

from __future__ import annotations

from airflow_provider_eo.config.mapping_syntax import FieldPath, parse_path, parse_positions, parse_template
from airflow_provider_eo.config.specs import METADATA_FIELDS, MappingSpec
from airflow_provider_eo.formats.field_selection import OTHER_FIELDS, FieldSelection, merged, selection_of

#: ``source`` fields the envelope's bad-record reasons name (``db.schema.table``).
TABLE_FIELDS = ("db", "schema", "table", "collection")


def _template_value_paths(spec: MappingSpec) -> list[FieldPath]:
    if spec.row_key == "kafka_key":
        return []
    fields = [field for _, field in parse_template(spec.row_key) if field is not None]
    return [path for part, path in fields if part == "value"]


def value_fields(spec: MappingSpec) -> FieldSelection:
    """The selection of the value's fields ``spec``'s mapping can reach (module docstring)."""
    if spec.function:
        return None
    image_paths = [parse_path(path) for path in (spec.columns or {}).values()]
    template_paths = _template_value_paths(spec)
    positions = parse_positions(spec.version) or ()
    if spec.envelope != "debezium":
        if spec.columns is None:
            return None
        return selection_of([*image_paths, *template_paths, *positions])
    after: FieldSelection = None if spec.columns is None else selection_of([*image_paths, *template_paths])
    before = selection_of(template_paths)
    metadata = [parse_path(name) for name in spec.metadata_columns if name not in METADATA_FIELDS]
    envelope_paths = [("op",), *positions, *metadata, *(("source", name) for name in TABLE_FIELDS)]
    selection = merged(selection_of(envelope_paths), {"after": after, "before": before})
    return merged(selection, {OTHER_FIELDS: {}})
