"""A writer schema (and optionally a field selection) compiled into one Python reader.

:func:`compile_reader` turns a fastavro-parsed Avro schema into ``read(data, pos) ->
(value, end)``: Python source generated once per schema id and field selection, with every
field's read inlined (varints, lengths, slices, ``struct`` unpacks) over the payload
``bytes``, so a record costs no per-field dispatch on the schema, no ``BytesIO`` and no
per-call schema parsing. Fields the :data:`~airflow_provider_eo.formats.field_selection.FieldSelection`
leaves out are skipped: advanced over without building a value, yet checked as reading
them would check them (a string's UTF-8, an enum's or a union's index), so a payload is bad
with a selection exactly when it is bad without one.

Contract: for a payload fastavro's ``schemaless_reader(buffer, schema, None, False)``
reads to its end, ``read`` returns fastavro's value with the fields outside the selection
left out (records -> dicts in writer field order, unions -> the branch's value, enums ->
symbols, logical types through fastavro's own ``LOGICAL_READERS``). On anything else it
either raises (any exception: a bad index, a truncated buffer, invalid UTF-8, a varint
beyond 64 bits, an array or map block longer than the payload) or returns an ``end`` that
is not the payload's length; the caller then reads the payload again with fastavro, whose
result or error is the answer. :func:`compile_reader` returns None for a schema it does
not compile (a type it does not know); fastavro reads those.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from fastavro.logical_readers import LOGICAL_READERS

from airflow_provider_eo.formats.field_selection import OTHER_FIELDS, FieldSelection

Reader = Callable[[bytes, int], tuple[Any, int]]
PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_NAMED = ("record", "error", "enum", "fixed")
_LONG_LIMIT = 1 << 64


class Unreadable(Exception):
    """The compiled reader met what it does not decode itself; fastavro decides."""


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos`` -> (value, next pos); Unreadable beyond 64 bits."""
    number = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 63:
            raise Unreadable("varint longer than 10 bytes")
    if number >= _LONG_LIMIT:
        raise Unreadable("varint beyond 64 bits")
    return (number >> 1) ^ -(number & 1), pos


def _length(data: bytes, pos: int) -> tuple[int, int]:
    """A length or count at ``pos`` that must not be negative."""
    number, pos = _long(data, pos)
    if number < 0:
        raise Unreadable("negative length")
    return number, pos


def _count(data: bytes, pos: int) -> tuple[int, int]:
    """An array or map block count (a negative one is followed by the block's byte size)."""
    count, pos = _long(data, pos)
    if count < 0:
        count = -count
        _, pos = _long(data, pos)
    if count > len(data):
        raise Unreadable("block count larger than the payload")
    return count, pos


class _Source:
    """Generated source text with indentation, and the globals it refers to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {
            "_long": _long, "_length": _length, "_count": _count, "Unreadable": Unreadable,
            "_double": struct.Struct("<d").unpack_from, "_float": struct.Struct("<f").unpack_from,
        }  # fmt: skip
        self.serial = 0

    def fresh(self, stem: str) -> str:
        self.serial += 1
        return f"{stem}{self.serial}"

    def constant(self, value: Any, stem: str = "_k") -> str:
        name = self.fresh(stem)
        self.names[name] = value
        return name


class _Compiler:
    def __init__(self, named: Mapping[str, Any]) -> None:
        self.named = dict(named)
        self.src = _Source()
        self.readers: dict[tuple[int, str], str] = {}  # (id(schema), selection key) -> function
        self.skippers: dict[int, str] = {}
        self.keep: list[Any] = []  # schemas whose id() keys the caches: kept alive

    # -- schema shapes -------------------------------------------------------------------
    def resolve(self, schema: Any) -> Any:
        """A named reference -> its definition; everything else as is."""
        while True:
            if isinstance(schema, str) and schema not in PRIMITIVES:
                if schema not in self.named:
                    raise Unreadable(f"unknown named type {schema!r}")
                schema = self.named[schema]
            elif (
                isinstance(schema, dict)
                and isinstance(schema.get("type"), str | dict | list)
                and (
                    not isinstance(schema["type"], str)
                    or schema["type"] not in (*PRIMITIVES, *_NAMED, "array", "map")
                )
            ):
                schema = schema["type"]
            else:
                return schema

    # -- reading -------------------------------------------------------------------------
    def read(self, out: list[str], indent: str, schema: Any, selection: FieldSelection, target: str) -> None:
        """Emit statements that read ``schema`` into the variable ``target``."""
        schema = self.resolve(schema)
        if isinstance(schema, list):
            self.union(out, indent, schema, selection, target, skip=False)
            return
        kind = schema if isinstance(schema, str) else schema["type"]
        if kind in ("record", "error"):
            out.append(f"{indent}{target}, p = {self.record_function(schema, selection)}(d, p)")
        elif kind == "null":
            out.append(f"{indent}{target} = None")
        elif kind == "boolean":
            out.append(f"{indent}{target} = d[p] != 0; p += 1")
        elif kind in ("int", "long"):
            out += [
                f"{indent}b = d[p]",
                f"{indent}if b < 128: {target} = (b >> 1) ^ -(b & 1); p += 1",
                f"{indent}else: {target}, p = _long(d, p)",
            ]
        elif kind in ("float", "double"):
            width = 4 if kind == "float" else 8
            out.append(f"{indent}{target} = _{kind}(d, p)[0]; p += {width}")
        elif kind in ("string", "bytes"):
            self.length(out, indent)
            decode = ".decode()" if kind == "string" else ""
            out.append(f"{indent}{target} = d[p:p + n]{decode}; p += n")
        elif kind == "fixed":
            out.append(f"{indent}{target} = d[p:p + {int(schema['size'])}]; p += {int(schema['size'])}")
        elif kind == "enum":
            symbols = self.src.constant(tuple(schema["symbols"]), "_symbols")
            out += [
                f"{indent}i, p = _long(d, p)",
                f"{indent}if not 0 <= i < {len(schema['symbols'])}: raise Unreadable('enum index')",
                f"{indent}{target} = {symbols}[i]",
            ]
        elif kind == "array":
            item = self.src.fresh("item")
            out += [f"{indent}{target} = []", f"{indent}c, p = _count(d, p)", f"{indent}while c:"]
            out.append(f"{indent}    for _ in range(c):")
            self.read(out, indent + "        ", schema["items"], None, item)
            out += [f"{indent}        {target}.append({item})", f"{indent}    c, p = _count(d, p)"]
        elif kind == "map":
            item, key = self.src.fresh("item"), self.src.fresh("key")
            out += [f"{indent}{target} = {{}}", f"{indent}c, p = _count(d, p)", f"{indent}while c:"]
            out.append(f"{indent}    for _ in range(c):")
            self.read(out, indent + "        ", "string", None, key)
            self.read(out, indent + "        ", schema["values"], None, item)
            out += [f"{indent}        {target}[{key}] = {item}", f"{indent}    c, p = _count(d, p)"]
        else:
            raise Unreadable(f"unknown Avro type {kind!r}")
        if isinstance(schema, dict) and schema.get("logicalType") and kind not in ("record", "error"):
            self.logical(out, indent, schema, target)

    def logical(self, out: list[str], indent: str, schema: dict[str, Any], target: str) -> None:
        reader = LOGICAL_READERS.get(f"{schema['type']}-{schema['logicalType']}")
        if reader is not None:
            function, argument = self.src.constant(reader, "_logical"), self.src.constant(schema, "_schema")
            out.append(f"{indent}{target} = {function}({target}, {argument}, None)")

    def length(self, out: list[str], indent: str) -> None:
        out += [
            f"{indent}b = d[p]",
            f"{indent}if b < 128 and not b & 1: n = b >> 1; p += 1",
            f"{indent}else: n, p = _length(d, p)",
        ]

    def union(
        self, out: list[str], indent: str, branches: list[Any], selection: FieldSelection, target: str,
        *, skip: bool,
    ) -> None:  # fmt: skip
        out += [f"{indent}b = d[p]; p += 1"]
        keyword = "if"
        for index, branch in enumerate(branches):
            if index >= 64:
                break  # indexes from 64 on take two bytes: fastavro reads those
            out.append(f"{indent}{keyword} b == {2 * index}:")
            before = len(out)
            if skip:
                self.skip(out, indent + "    ", branch)
            else:
                self.read(out, indent + "    ", branch, selection, target)
            if len(out) == before:
                out.append(f"{indent}    pass")
            keyword = "elif"
        out.append(f"{indent}else: raise Unreadable('union index')")

    def record_function(self, schema: dict[str, Any], selection: FieldSelection) -> str:
        """The name of the function reading ``schema`` under ``selection`` (generated once)."""
        key = (id(schema), repr(selection))
        if key in self.readers:
            return self.readers[key]
        self.keep.append(schema)
        name = self.readers[key] = self.src.fresh("_record")
        out = [f"def {name}(d, p):"]
        kept: list[tuple[str, str]] = []
        for field in schema["fields"]:
            field_name = field["name"]
            inner: FieldSelection = None
            if selection is not None:
                if field_name not in selection and OTHER_FIELDS not in selection:
                    self.skip(out, "    ", field["type"])
                    continue
                inner = selection.get(field_name, selection.get(OTHER_FIELDS))
            variable = self.src.fresh("v")
            self.read(out, "    ", field["type"], inner, variable)
            kept.append((field_name, variable))
        entries = ", ".join(f"{field_name!r}: {variable}" for field_name, variable in kept)
        out.append(f"    return {{{entries}}}, p")
        self.src.lines += out
        return name

    # -- skipping ------------------------------------------------------------------------
    def skip(self, out: list[str], indent: str, schema: Any) -> None:
        """Emit statements that advance ``p`` over a value of ``schema``."""
        schema = self.resolve(schema)
        if isinstance(schema, list):
            self.union(out, indent, schema, None, "", skip=True)
            return
        kind = schema if isinstance(schema, str) else schema["type"]
        if kind in ("record", "error"):
            out.append(f"{indent}p = {self.skip_function(schema)}(d, p)")
        elif kind == "null":
            pass
        elif kind == "boolean":
            out.append(f"{indent}p += 1")
        elif kind in ("int", "long"):
            out += [f"{indent}while d[p] >= 128: p += 1", f"{indent}p += 1"]
        elif kind == "enum":  # the index is checked, as reading it would
            out += [
                f"{indent}i, p = _long(d, p)",
                f"{indent}if not 0 <= i < {len(schema['symbols'])}: raise Unreadable('enum index')",
            ]
        elif kind in ("float", "double"):
            out.append(f"{indent}p += {4 if kind == 'float' else 8}")
        elif kind in ("string", "bytes"):  # a skipped string is still checked to be UTF-8
            self.length(out, indent)
            out.append(f"{indent}{'d[p:p + n].decode(); ' if kind == 'string' else ''}p += n")
        elif kind == "fixed":
            out.append(f"{indent}p += {int(schema['size'])}")
        elif kind in ("array", "map"):
            out += [f"{indent}c, p = _count(d, p)", f"{indent}while c:", f"{indent}    for _ in range(c):"]
            if kind == "map":
                self.skip(out, indent + "        ", "string")
            before = len(out)
            self.skip(out, indent + "        ", schema["items" if kind == "array" else "values"])
            if len(out) == before:
                out.append(f"{indent}        pass")
            out.append(f"{indent}    c, p = _count(d, p)")
        else:
            raise Unreadable(f"unknown Avro type {kind!r}")

    def skip_function(self, schema: dict[str, Any]) -> str:
        if id(schema) in self.skippers:
            return self.skippers[id(schema)]
        self.keep.append(schema)
        name = self.skippers[id(schema)] = self.src.fresh("_skip")
        out = [f"def {name}(d, p):"]
        for field in schema["fields"]:
            self.skip(out, "    ", field["type"])
        out.append("    return p")
        self.src.lines += out
        return name


def compile_reader(schema: Any, selection: FieldSelection = None) -> Reader | None:
    """``read(data, pos) -> (value, end)`` for a fastavro-parsed ``schema`` (named types from
    its ``__named_schemas``), leaving out what ``selection`` does not keep (module docstring);
    None when the schema has a type this module does not compile."""
    named = schema.get("__named_schemas", {}) if isinstance(schema, dict) else {}
    compiler = _Compiler(named)
    try:
        top: list[str] = ["def read(d, p):"]
        compiler.read(top, "    ", schema, selection, "value")
        top.append("    return value, p")
        source = "\n".join([*compiler.src.lines, *top])
        namespace = dict(compiler.src.names)
        exec(compile(source, "<avro compiled reader>", "exec"), namespace)  # our own generated source
    except (Unreadable, KeyError, TypeError, ValueError, RecursionError):
        return None
    reader: Reader = namespace["read"]
    return reader
