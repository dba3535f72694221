"""The small grammars of the ``mapping`` section: field paths, row-key templates,
row-key prefixes and version sources.

One definition serves the config validation (which words the errors with file,
pipeline and field) and the Spark tasks (which apply the parsed forms). Every
parser raises ``ValueError`` with a message that quotes the offending text.

* A **field path** is dotted: ``customer.id``. Segments are non-empty and hold no
  whitespace and none of ``. [ ] { } : !``; a decimal segment also indexes an array
  (``items.0.sku``).
* A **row-key template** is literal text with ``{path}`` fields: ``"{customer.id}:{order_id}"``.
  ``{key}`` is the decoded Kafka key and ``{key.<path>}`` a field of it; every other field
  is a path into the value.
* A **row-key prefix** is ``hash:N`` (1 <= N <= 32) or ``salt:N`` (2 <= N <= 10000).
* A **version source** is ``offset`` or ``field:<path>``; under ``envelope: debezium`` also
  ``field:<path>+<path>`` (a log file name, then the position inside it: MySQL's
  ``source.file+source.pos``).
* A **tombstone version** is ``header:<name>`` (a header's decimal text) or ``key:<path>``
  (a field of the decoded Kafka key).
"""

from __future__ import annotations

import re
import string
from typing import Literal

FieldPath = tuple[str, ...]
#: One template field: which part of the record (``"value"`` or ``"key"``) and the path inside it.
TemplateField = tuple[Literal["value", "key"], FieldPath]
#: Literal text, then the field that follows it (None after the last literal).
TemplatePart = tuple[str, TemplateField | None]

_SEGMENT = re.compile(r"[^.\[\]{}:!\s]+")
_PREFIX = re.compile(r"(hash|salt):(\d+)")
MAX_HASH_CHARS = 32
MAX_SALT_BUCKETS = 10_000
KEY_FIELD = "key"


def parse_path(text: str) -> FieldPath:
    """``"a.b.0"`` -> ``("a", "b", "0")``; ValueError when a segment is empty or illegal."""
    segments = tuple(text.split("."))
    if not all(_SEGMENT.fullmatch(segment) for segment in segments):
        raise ValueError(
            f"{text!r} is not a dotted field path (segments separated by '.', "
            "without whitespace or any of . [ ] { } : !)"
        )
    return segments


def parse_template(template: str) -> list[TemplatePart]:
    """The parts of a row-key template; ValueError when it is malformed or names no field."""
    try:
        pieces = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"is not a valid template: {exc}") from None
    parts: list[TemplatePart] = []
    for literal, name, spec, conversion in pieces:
        if name is None:
            parts.append((literal, None))
            continue
        bad = f"template fields must be dotted field paths such as {{customer.id}}, got {{{name}}}"
        if spec or conversion or not name or not all(map(_SEGMENT.fullmatch, name.split("."))):
            raise ValueError(bad)
        path = tuple(name.split("."))
        if path[0] == KEY_FIELD:
            parts.append((literal, ("key", path[1:])))
        else:
            parts.append((literal, ("value", path)))
    if not any(field for _, field in parts):
        raise ValueError(f"must be 'kafka_key' or a template like '{{user_id}}:{{region}}', got {template!r}")
    return parts


def parse_prefix(text: str) -> tuple[Literal["hash", "salt"], int]:
    """``"hash:4"`` -> ``("hash", 4)``; ValueError outside the documented bounds."""
    match = _PREFIX.fullmatch(text)
    if match is None:
        raise ValueError(f"must be 'hash:N' or 'salt:N', got {text!r}")
    kind, number = match.group(1), int(match.group(2))
    if kind == "hash" and not 1 <= number <= MAX_HASH_CHARS:
        raise ValueError(f"hash:N takes 1 <= N <= {MAX_HASH_CHARS} hex characters, got {text!r}")
    if kind == "salt" and not 2 <= number <= MAX_SALT_BUCKETS:
        raise ValueError(f"salt:N takes 2 <= N <= {MAX_SALT_BUCKETS} buckets, got {text!r}")
    return ("hash" if kind == "hash" else "salt"), number


def parse_version(text: str) -> FieldPath | None:
    """``"offset"`` -> None; ``"field:a.b"`` -> ``("a", "b")``; ValueError otherwise (a
    ``+`` composite included: :func:`parse_positions` reads those)."""
    paths = parse_positions(text)
    if paths is not None and len(paths) > 1:
        raise ValueError(f"a composite version {text!r} needs 'envelope: debezium'")
    return None if paths is None else paths[0]


def parse_positions(text: str) -> tuple[FieldPath, ...] | None:
    """``"offset"`` -> None; ``"field:a.b"`` -> one path; ``"field:source.file+source.pos"``
    -> two (a file name and a position in it); ValueError otherwise."""
    if text == "offset":
        return None
    kind, _, rest = text.partition(":")
    if kind != "field" or not rest:
        raise ValueError(f"must be 'offset' or 'field:<dotted.path>', got {text!r}")
    parts = rest.split("+")
    if len(parts) > 2:
        raise ValueError(f"a composite version names two paths (file+position), got {text!r}")
    return tuple(parse_path(part) for part in parts)


def parse_tombstone_version(text: str) -> tuple[Literal["header", "key"], str | FieldPath]:
    """``"header:txn_version"`` -> ``("header", "txn_version")``; ``"key:a.b"`` ->
    ``("key", ("a", "b"))``; ValueError otherwise."""
    kind, _, rest = text.partition(":")
    if kind == "header" and rest:
        return "header", rest
    if kind == "key" and rest:
        return "key", parse_path(rest)
    raise ValueError(f"must be 'header:<name>' or 'key:<dotted.path>', got {text!r}")
