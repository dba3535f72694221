"""One Kafka record -> one HBase row mutation, as the pipeline's ``mapping`` declares.

:class:`RecordMapper` decodes the value (``value_format``), takes its fields
(``columns``, ``flatten``), adds Kafka metadata cells, derives the row key
(``row_key``, ``row_key_prefix``) and the version (``version``). A value that decodes
to something other than an object (``string``/``bytes`` formats, a primitive schema) is
the single field ``value``. A null value (tombstone) deletes the row's family (under
``version: field:...`` at its ``tombstone_version``). Under ``envelope: debezium`` the value
is a change event (:mod:`.envelope`): the mapping applies to its ``after`` image, a delete
event deletes the family at the event's version, and a tombstone (or an ignored truncate)
maps to None: no mutation, counted by the write task as a skipped change.
:class:`FunctionMapping` lets a user function produce the fields instead.

Every problem with a record raises ``BadRecord`` with a human reason, among them what
HBase would refuse forever: a row key longer than 32,767 bytes, or a cell larger than
``hbase.keyvalue_maxsize`` (row, family, qualifier and value, as HBase counts it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_eo.config.mapping_syntax import parse_positions, parse_version
from airflow_provider_eo.config.size_limits import KEYVALUE_OVERHEAD
from airflow_provider_eo.config.specs import HBASE_KEYVALUE_MAXSIZE, METADATA_FIELDS, MappingSpec
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.decoder_factory import build_decoder
from airflow_provider_eo.formats.plain import Decoder
from airflow_provider_eo.spark.records import KafkaRecord, RowDelete, RowMutation, RowPut
from airflow_provider_eo.spark.task.mapping.columns import SelectedColumns, TopLevelColumns
from airflow_provider_eo.spark.task.mapping.envelope import Change, DebeziumEnvelope, EnvelopeColumns
from airflow_provider_eo.spark.task.mapping.metadata import MetadataColumns
from airflow_provider_eo.spark.task.mapping.row_keys import RowKeys
from airflow_provider_eo.spark.task.mapping.versions import TombstoneVersion, VersionField


class RecordMapper:
    """The declarative mapping of one pipeline (``docs/formats.md``)."""

    def __init__(
        self,
        spec: MappingSpec,
        family: str,
        *,
        value_decoder: Decoder,
        key_decoder: Decoder,
        max_cell_bytes: int = HBASE_KEYVALUE_MAXSIZE,
    ) -> None:
        self.family = family.encode("utf-8")
        self.value_decoder = value_decoder
        self.max_record_bytes = spec.max_record_bytes
        self.max_cell_bytes = max_cell_bytes
        self.row_keys = RowKeys(spec.row_key, spec.row_key_prefix, key_decoder)
        self.columns: TopLevelColumns | SelectedColumns = (
            TopLevelColumns(self.family, spec.flatten)
            if spec.columns is None
            else SelectedColumns(self.family, spec.columns, spec.flatten)
        )
        kafka = {name: q for name, q in spec.metadata_columns.items() if name in METADATA_FIELDS}
        envelope = {name: q for name, q in spec.metadata_columns.items() if name not in METADATA_FIELDS}
        self.metadata = MetadataColumns(self.family, kafka) if kafka else None
        self.envelope_columns = EnvelopeColumns(self.family, envelope) if envelope else None
        self.envelope: DebeziumEnvelope | None = None
        self.version: VersionField | None = None
        if spec.envelope == "debezium":
            self.envelope = DebeziumEnvelope(parse_positions(spec.version), spec.truncate)
        else:
            version_path = parse_version(spec.version)
            self.version = VersionField(version_path) if version_path else None
        self.tombstone_version = (
            TombstoneVersion(spec.tombstone_version, key_decoder) if spec.tombstone_version else None
        )

    def map(self, record: KafkaRecord) -> RowMutation | None:
        """Map one record; None only under an envelope (a tombstone or an ignored truncate: no
        mutation). Raises BadRecord."""
        if record.size_bytes > self.max_record_bytes:
            raise BadRecord(
                f"record is {record.size_bytes} bytes, larger than max_record_bytes={self.max_record_bytes}"
            )
        if self.envelope is not None:
            return self._map_change(record, self.envelope)
        fields = self.fields(record)
        if fields is None:
            if self.version is None:
                return RowDelete(self.row_keys.row(record, None), (self.family,))
            if self.tombstone_version is None:
                raise BadRecord(
                    f"a tombstone has no version field (mapping.version is 'field:{self.version.name}'); "
                    "declare mapping.tombstone_version: 'header:<name>' or 'key:<path>' "
                    "to delete at that version"
                )
            version = self.tombstone_version.of(record)
            return RowDelete(self.row_keys.row(record, None), (self.family,), version)
        return self._put(record, fields, None if self.version is None else self.version.of(fields))

    def _map_change(self, record: KafkaRecord, envelope: DebeziumEnvelope) -> RowMutation | None:
        """A change event -> its put or delete; None for a tombstone or an ignored truncate."""
        if record.value is None:
            return None
        value = envelope.unwrap(self.value_decoder(record.value))
        if value is None:  # a schema wrapper around a null payload: a tombstone too
            return None
        change = envelope.change(value)
        if change is None:
            return None
        if change.op == "d":
            if change.image is None and self.row_keys.names_value_fields:
                raise BadRecord(
                    "a delete event has no 'before' image, and the row key template names fields of the value"
                )
            return RowDelete(self.row_keys.row(record, change.image), (self.family,), change.version)
        fields = self.change_fields(record, change)
        if fields is None:
            return None
        return self._put(record, fields, change.version, change.envelope)

    def change_fields(self, record: KafkaRecord, change: Change) -> Mapping[str, Any] | None:
        """The fields a ``c``/``u``/``r`` event writes: its ``after`` image."""
        return change.image

    def _put(
        self, record: KafkaRecord, fields: Any, version: int | None, envelope: dict[str, Any] | None = None
    ) -> RowPut:
        """The put of ``fields`` at ``version``; raises BadRecord."""
        try:
            row = self.row_keys.row(record, fields)
            cells = self.columns.cells(fields)
        except UnicodeEncodeError as exc:  # a "\ud800" escape decodes to a lone surrogate
            raise BadRecord(f"a string is not encodable as UTF-8 (lone surrogate escape?): {exc}") from None
        except (ValueError, OverflowError) as exc:  # a datetime out of range in UTC, ...
            raise BadRecord(f"a field cannot be encoded as a cell: {exc}") from None
        if self.metadata is not None:
            self.metadata.add_cells(record, cells)
        if self.envelope_columns is not None and envelope is not None:
            self.envelope_columns.add_cells(envelope, cells)
        put = RowPut(row, cells, version)
        if put.size_bytes + KEYVALUE_OVERHEAD > self.max_cell_bytes:  # some cell may be too large
            self._check_cells(put)
        return put

    def fields(self, record: KafkaRecord) -> Any:
        """The decoded value (a non-object wrapped as ``{"value": ...}``), or None for a delete."""
        if record.value is None:
            return None
        value = self.value_decoder(record.value)
        return value if isinstance(value, dict) else {"value": value}

    def _check_cells(self, put: RowPut) -> None:
        """Raise BadRecord naming the first cell larger than ``max_cell_bytes`` as HBase counts it."""
        for column, value in put.cells.items():
            size = KEYVALUE_OVERHEAD + len(put.row) + len(column) - 1 + len(value)  # no ':' stored
            if size > self.max_cell_bytes:
                name = column.decode("utf-8", "backslashreplace")
                raise BadRecord(
                    f"cell {name!r} is {size} bytes as an HBase cell (row, column and value), "
                    f"larger than hbase.keyvalue_maxsize={self.max_cell_bytes}"
                )


class _FunctionColumns(TopLevelColumns):
    """A user function's cells: ``qualifier`` or ``family:qualifier``."""

    def column(self, name: str | bytes) -> bytes:
        raw = name if isinstance(name, bytes) else name.encode("utf-8")
        return raw if b":" in raw else self.family + b":" + raw


class FunctionMapping(RecordMapper):
    """A user function ``record -> dict of cells | None`` (None deletes the row).

    The dict maps ``qualifier`` or ``family:qualifier`` to a value encoded like a field;
    row key templates and ``version: field:...`` read the returned dict; metadata columns apply.
    Under ``envelope: debezium`` the function is called as ``function(record, change)`` for
    ``c``/``u``/``r`` events only (``change``: :class:`~.envelope.Change`, its ``image`` the
    ``after`` image, its ``envelope`` the whole event) and returns the cells, or None to write
    nothing (skipped); deletes, tombstones and versions are the envelope's, and a delete's row
    key template reads ``before``.
    """

    def __init__(self, spec: MappingSpec, family: str, **kwargs: Any) -> None:
        super().__init__(spec, family, **kwargs)
        self.columns = _FunctionColumns(self.family)
        self.function_path = spec.function or ""
        self.function = load_function(self.function_path)

    def fields(self, record: KafkaRecord) -> Mapping[str, Any] | None:
        return self._call(record)

    def change_fields(self, record: KafkaRecord, change: Change) -> Mapping[str, Any] | None:
        return self._call(record, change)

    def _call(self, *args: Any) -> Mapping[str, Any] | None:
        """The function's result; BadRecord when it raises or returns something else than a mapping."""
        try:
            result = self.function(*args)
        except BadRecord:
            raise
        except Exception as exc:
            raise BadRecord(
                f"mapping function {self.function_path} raised {type(exc).__name__}: {exc}"
            ) from None
        if result is not None and not isinstance(result, Mapping):
            raise BadRecord(f"mapping function {self.function_path} returned {type(result).__name__}")
        return result


def load_function(path: str) -> Callable[[KafkaRecord], Any]:
    """Import ``"pkg.module:function"``; ValueError with the path when it fails."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"mapping function {path!r} must look like 'pkg.module:function'")
    try:
        function = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import mapping function {path!r}: {exc}") from exc
    if not callable(function):
        raise ValueError(f"mapping function {path!r} is not callable")
    return function


def build_mapper(
    spec: MappingSpec,
    family: str,
    *,
    value_decoder: Decoder | None = None,
    key_decoder: Decoder | None = None,
    max_cell_bytes: int = HBASE_KEYVALUE_MAXSIZE,
) -> RecordMapper:
    """The mapper ``spec`` declares (a user function if given). Decoders default to the
    plain ones of ``spec.value_format``/``key_format`` (a registry format needs them given)."""
    value_decoder = value_decoder or build_decoder(spec.value_format, "value", None)
    key_decoder = key_decoder or build_decoder(spec.key_format, "key", None)
    mapper = FunctionMapping if spec.function else RecordMapper
    return mapper(
        spec, family, value_decoder=value_decoder, key_decoder=key_decoder, max_cell_bytes=max_cell_bytes
    )
