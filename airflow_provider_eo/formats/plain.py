"""The formats that need no schema: ``json``, ``string`` and ``bytes``.

Each decoder is ``decode(data: bytes) -> Any`` and raises ``BadRecord`` whose reason
starts with the part (``value``/``key``) and names the format:

* ``json``: UTF-8 JSON text. Decoded by msgspec; a text msgspec refuses is decoded again
  by the standard library, which accepts exactly what it always did (lone surrogate
  escapes) and words the errors (``value is not valid JSON: ...``). NaN/Infinity and
  numbers beyond a double's range are refused. A value must be an object (a dict); a key
  may be any JSON value.
* ``string``: UTF-8 text -> ``str``. As a value, the record's single field is ``value``.
* ``bytes``: the bytes as they are. As a value, the record's single field is ``value``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import msgspec

from airflow_provider_eo.errors import BadRecord

Decoder = Callable[[bytes], Any]
_msgspec_decode = msgspec.json.Decoder().decode


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"number {text} is out of range")
    return number


def _stdlib_json(data: bytes, part: str) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRecord(f"{part} is not valid UTF-8: {exc}") from None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except ValueError as exc:
        raise BadRecord(f"{part} is not valid JSON: {exc}") from None


def decode_json_value(data: bytes) -> dict[str, Any]:
    """A JSON object -> dict; BadRecord when not UTF-8, not JSON or not an object."""
    try:
        value = _msgspec_decode(data)
    except (msgspec.MsgspecError, ValueError):  # UnicodeDecodeError included
        value = _stdlib_json(data, "value")
    if not isinstance(value, dict):
        raise BadRecord(f"JSON value is not an object (got {type(value).__name__})")
    return value


def decode_json_key(data: bytes) -> Any:
    """Any JSON value; BadRecord when not UTF-8 or not JSON."""
    try:
        return _msgspec_decode(data)
    except (msgspec.MsgspecError, ValueError):
        return _stdlib_json(data, "key")


def string_decoder(part: str) -> Decoder:
    """UTF-8 text -> str; BadRecord naming ``part`` otherwise."""

    def decode_string(data: bytes) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadRecord(f"{part} is not valid UTF-8 (format string): {exc}") from None

    return decode_string


def decode_bytes(data: bytes) -> bytes:
    """The bytes as they are (never raises)."""
    return data


def plain_decoder(fmt: str, part: str) -> Decoder:
    """The decoder of ``fmt`` (json, string, bytes) for ``part`` (value, key); ValueError otherwise."""
    if fmt == "json":
        return decode_json_value if part == "value" else decode_json_key
    if fmt == "string":
        return string_decoder(part)
    if fmt == "bytes":
        return decode_bytes
    raise ValueError(f"{fmt!r} is not a plain format (json, string, bytes)")
