"""Cell bytes of one decoded value (the encodings ``docs/formats.md`` documents).

By exact Python type: ``str`` -> UTF-8; ``int`` -> decimal text; ``float`` -> ``repr``
(shortest round-trip text; ``NaN``, ``Infinity``, ``-Infinity`` when not finite);
``bool`` -> ``true``/``false``; ``None`` -> ``null``; ``bytes`` -> as is;
``datetime`` -> ISO-8601 in UTC with 6 fractional digits and ``Z``
(``2024-05-01T12:30:00.250000Z``; a naive datetime is taken as UTC); ``date`` ->
``YYYY-MM-DD``; ``time`` -> ``HH:MM:SS.ffffff`` (an offset, if any, is dropped);
``Decimal`` -> plain text keeping its scale, never an exponent (``Decimal("1.20")`` ->
``1.20``); ``UUID`` -> canonical lowercase. Lists and dicts -> compact JSON
(``separators=(",", ":")``, non-ASCII kept as UTF-8), inside which bytes are standard
base64 strings (padded), the logical types the strings above, and non-finite floats
the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

Values decoded from JSON encode byte-identically to the standard library's
``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` (strings unquoted).
A value of any other type raises ``BadRecord``.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import uuid
from collections.abc import Callable
from decimal import Decimal
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from airflow_provider_eo.errors import BadRecord

_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def datetime_text(value: dt.datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in UTC (naive = UTC)."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat(timespec="microseconds") + "Z"


def float_text(value: float) -> str:
    """``repr`` of a finite float; ``NaN``, ``Infinity`` or ``-Infinity`` otherwise."""
    text = repr(value)
    return text if math.isfinite(value) else _NON_FINITE[text]


def _logical_text(value: Any) -> str | None:
    """The text of a logical-type value (datetime, date, time, Decimal, UUID), else None."""
    if isinstance(value, dt.datetime):
        return datetime_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.replace(tzinfo=None).isoformat(timespec="microseconds")
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, uuid.UUID):
        return str(value)
    return None


def _json_default(value: Any) -> Any:
    """What a JSON cell holds for a non-JSON value; TypeError for an unknown type."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    text = _logical_text(value)
    if text is None:
        raise TypeError(f"a {type(value).__name__} value has no cell encoding")
    return text


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by its string spelling."""
    if isinstance(value, float) and not math.isfinite(value):
        return float_text(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


_compact_encoder = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_json_default
)


class _CompactJson:
    """``_compact_encoder.encode`` with the C encoder built once instead of at every call
    (that construction cost more than encoding a small object). Its circular-reference
    markers may keep entries after a failed call, so a failure builds a fresh one."""

    def __init__(self) -> None:
        self._encode = self._build()

    @staticmethod
    def _build() -> Any:
        if c_make_encoder is None:  # no C accelerator: the encoder as it is
            return lambda value: _compact_encoder.encode(value)
        one = c_make_encoder({}, _json_default, encode_basestring, None, ":", ",", False, False, False)
        return lambda value: "".join(one(value, 0))

    def __call__(self, value: Any) -> str:
        try:
            return self._encode(value)
        except BaseException:
            self._encode = self._build()
            raise


_encode_compact = _CompactJson()


def compact_json(value: Any) -> bytes:
    """Compact JSON of ``value`` in UTF-8 (what ``_compact_encoder.encode`` gives); BadRecord
    for a value without an encoding."""
    if isinstance(value, str):
        return _compact_encoder.encode(value).encode("utf-8")
    try:
        return _encode_compact(value).encode("utf-8")
    except ValueError:  # a non-finite float (allow_nan=False); UnicodeEncodeError passes
        return _encode_compact(_finite(value)).encode("utf-8")
    except TypeError as exc:
        raise BadRecord(f"cannot encode a cell: {exc}") from None


def encode_other(value: Any) -> bytes:
    """Subclasses of the scalar types, logical types, then compact JSON."""
    text = _logical_text(value)
    if text is not None:
        return text.encode("utf-8")
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return compact_json(value)


#: Cell encoder per exact type; anything else goes through ``encode_other``.
ENCODERS: dict[type, Callable[[Any], bytes]] = {
    str: lambda value: value.encode("utf-8"),
    int: lambda value: str(value).encode(),
    float: lambda value: float_text(value).encode(),
    bool: lambda value: b"true" if value else b"false",
    type(None): lambda _value: b"null",
    bytes: lambda value: value,
    dt.datetime: lambda value: datetime_text(value).encode(),
    dt.date: lambda value: value.isoformat().encode(),
    dt.time: lambda value: value.replace(tzinfo=None).isoformat(timespec="microseconds").encode(),
    Decimal: lambda value: format(value, "f").encode(),
    uuid.UUID: lambda value: str(value).encode(),
    dict: compact_json,
    list: compact_json,
}


def encode_value(value: Any) -> bytes:
    """The cell bytes of one decoded value (module docstring); BadRecord for an unknown type,
    UnicodeEncodeError for a string holding a lone surrogate."""
    return ENCODERS.get(type(value), encode_other)(value)
