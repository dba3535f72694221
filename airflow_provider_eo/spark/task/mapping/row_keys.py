"""Row keys: the Kafka key bytes or a template over fields, then an optional prefix.

* ``kafka_key``: the record's key bytes as they are on the broker (whatever
  ``key_format`` says); a record without a key (null or empty) is a bad record.
* a template ``"{customer.id}:{order_id}"``: literal text in UTF-8, each field encoded as
  a cell value (``cells``); ``{key}`` is the decoded Kafka key, ``{key.id}`` a field of it.
  A field that is missing or null is a bad record. A tombstone (null value) has only its
  key: its row key comes from a template that names ``{key...}`` fields only, else it is a
  bad record.
* prefix ``hash:N``: the first N hex characters (lowercase) of the MD5 of the unprefixed
  key, then the key (``hash:4`` of ``u-17`` -> ``<4 hex>u-17``).
* prefix ``salt:N``: the bucket ``crc32(unprefixed key) mod N`` in decimal, zero-padded to
  the width of ``N-1``, then the key (``salt:16`` -> ``07u-17``).

A row key longer than HBase's 32,767 bytes is a bad record.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable
from typing import Any

from airflow_provider_eo.config.mapping_syntax import TemplateField, parse_prefix, parse_template
from airflow_provider_eo.config.size_limits import MAX_ROW_BYTES
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.spark.records import KafkaRecord
from airflow_provider_eo.spark.task.mapping.cells import encode_value
from airflow_provider_eo.spark.task.mapping.paths import MISSING, lookup

Decoder = Callable[[bytes], Any]
_UNDECODED: Any = object()


def hash_prefix(chars: int) -> Callable[[bytes], bytes]:
    """``key -> md5(key).hexdigest()[:chars] + key``."""
    return lambda key: hashlib.md5(key, usedforsecurity=False).hexdigest()[:chars].encode() + key


def salt_prefix(buckets: int) -> Callable[[bytes], bytes]:
    """``key -> zero-padded (crc32(key) % buckets) + key``, width ``len(str(buckets - 1))``."""
    width = len(str(buckets - 1))
    return lambda key: b"%0*d" % (width, zlib.crc32(key) % buckets) + key


def checked_row(row: bytes) -> bytes:
    """``row``, or BadRecord when HBase would refuse it (longer than ``MAX_ROW_BYTES``)."""
    if len(row) > MAX_ROW_BYTES:
        raise BadRecord(f"row key is {len(row)} bytes, longer than HBase's limit of {MAX_ROW_BYTES}")
    return row


def _name(field: TemplateField) -> str:
    part, path = field
    return ".".join(("key", *path) if part == "key" else path)


class RowKeys:
    """The row key of each record, as ``mapping.row_key`` and ``row_key_prefix`` declare."""

    def __init__(self, row_key: str, prefix: str | None, key_decoder: Decoder) -> None:
        self.parts: list[tuple[bytes, TemplateField | None, str]] | None = None
        if row_key != "kafka_key":
            self.parts = [
                (literal.encode("utf-8"), field, _name(field) if field else "")
                for literal, field in parse_template(row_key)
            ]
        self.names_value_fields = any(field and field[0] == "value" for _, field, _ in self.parts or ())
        self.key_decoder = key_decoder
        self.prefix: Callable[[bytes], bytes] | None = None
        if prefix is not None:
            kind, number = parse_prefix(prefix)
            self.prefix = hash_prefix(number) if kind == "hash" else salt_prefix(number)

    def row(self, record: KafkaRecord, fields: Any) -> bytes:
        """The row key of ``record`` whose value decoded to ``fields`` (None: a tombstone);
        raises BadRecord."""
        if self.parts is None:
            key = record.key
            if not key:
                kind = "a tombstone" if record.value is None else "the row key"
                raise BadRecord(f"record has no Kafka key, needed for {kind}")
            if self.prefix is None:
                return key if len(key) <= MAX_ROW_BYTES else checked_row(key)
        elif fields is None and self.names_value_fields:
            raise BadRecord(
                "a delete (tombstone) cannot derive its row key from the row key template "
                "(it names fields of the value; a template of {key...} fields only can)"
            )
        else:
            key = self._render(record, fields)
        return checked_row(self.prefix(key) if self.prefix else key)

    def _render(self, record: KafkaRecord, fields: Any) -> bytes:
        out = bytearray()
        decoded_key = _UNDECODED
        for literal, field, name in self.parts or ():
            out += literal
            if field is None:
                continue
            part, path = field
            if part == "key":
                if decoded_key is _UNDECODED:
                    decoded_key = self.key_decoder(record.key) if record.key else None
                value = lookup(decoded_key, path)
            else:
                value = lookup(fields, path)
            if value is None or value is MISSING:
                raise BadRecord(f"row key field {name!r} is missing or null")
            out += encode_value(value)
        return bytes(out)
