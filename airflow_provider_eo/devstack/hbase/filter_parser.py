"""Parser of HBase filter strings (``ParseFilter`` syntax) into :mod:`filters` objects.

Grammar: ``expr := term (OR term)*``, ``term := unary (AND unary)*``,
``unary := '(' expr ')' | Name '(' args ')'``; arguments are quoted strings
(``''`` escapes a quote), integers, ``true``/``false`` and comparison operators.
Anything outside the supported set (unknown filter names, ``SKIP``/``WHILE``,
malformed strings) raises a Thrift ``IOError`` naming the problem: the gateway
never answers a filter it cannot evaluate exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from airflow_provider_eo.devstack.hbase import errors, filters
from airflow_provider_eo.devstack.hbase.filters import RowFilter

_TOKEN = re.compile(
    rb"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op><=|>=|!=|<|>|=)|(?P<punct>[(),])|(?P<word>[^\s(),'<>=!]+))"
)
Arg = bytes | int | bool | str


class FilterSyntaxError(Exception):
    """A filter string that cannot be parsed or is not supported."""


def _tokenize(text: bytes) -> list[tuple[str, bytes]]:
    tokens: list[tuple[str, bytes]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise FilterSyntaxError(f"Incorrect filter string at offset {pos}: {text[pos : pos + 20]!r}")
        kind = match.lastgroup or ""
        value = match.group(kind)
        if kind == "str":
            value = value[1:-1].replace(b"''", b"'")
        tokens.append((kind, value))
        pos = match.end()
    return tokens


def _comparator(arg: Arg) -> filters.Comparator:
    if not isinstance(arg, bytes) or b":" not in arg:
        raise FilterSyntaxError("a comparator must be a quoted 'type:value' string")
    kind, _, operand = arg.partition(b":")
    if kind == b"binary":
        return filters.BinaryComparator(operand)
    if kind == b"binaryprefix":
        return filters.BinaryPrefixComparator(operand)
    if kind == b"regexstring":
        return filters.RegexStringComparator(re.compile(operand, re.DOTALL))
    if kind == b"substring":
        return filters.SubstringComparator(operand)
    raise FilterSyntaxError(f"Comparator type {kind.decode('utf-8', 'replace')} not supported")


def _expect(args: list[Arg], *kinds: type) -> list[Any]:
    if len(args) != len(kinds) or not all(isinstance(a, k) for a, k in zip(args, kinds, strict=True)):
        names = ", ".join(k.__name__ for k in kinds)
        raise FilterSyntaxError(f"wrong arguments {args!r}, expected ({names})")
    return list(args)


def _operator(arg: Arg) -> str:
    if not isinstance(arg, str) or arg not in filters.OPERATORS:
        raise FilterSyntaxError(f"invalid compare operator {arg!r}")
    return arg


def _single_column_value(args: list[Arg], exclude: bool) -> RowFilter:
    if len(args) not in (4, 6):
        raise FilterSyntaxError("SingleColumnValueFilter takes 4 or 6 arguments")
    family, qualifier = _expect(args[:2], bytes, bytes)
    flags = _expect(args[4:], bool, bool) if len(args) == 6 else [False, True]
    return filters.SingleColumnValueFilter(
        family, qualifier, _operator(args[2]), _comparator(args[3]), flags[0], flags[1], exclude
    )


def _compare(part: str) -> Callable[[list[Arg]], RowFilter]:
    def build(args: list[Arg]) -> RowFilter:
        if len(args) != 2:
            raise FilterSyntaxError("a compare filter takes (operator, 'comparator')")
        return filters.CompareFilter(part, _operator(args[0]), _comparator(args[1]))

    return build


def _key_only(args: list[Arg]) -> RowFilter:
    return filters.KeyOnlyFilter(*_expect(args, bool)) if args else filters.KeyOnlyFilter()


def _page(args: list[Arg]) -> RowFilter:
    (size,) = _expect(args, int)
    if size < 0:
        raise FilterSyntaxError("PageFilter size must be >= 0")
    return filters.PageFilter(size)


def _column_prefixes(args: list[Arg]) -> RowFilter:
    if not args or not all(isinstance(a, bytes) for a in args):
        raise FilterSyntaxError("column prefixes must be quoted strings")
    return filters.ColumnPrefixFilter(tuple(a for a in args if isinstance(a, bytes)))


BUILDERS: dict[bytes, Callable[[list[Arg]], RowFilter]] = {
    b"PrefixFilter": lambda a: filters.PrefixFilter(*_expect(a, bytes)),
    b"KeyOnlyFilter": _key_only,
    b"FirstKeyOnlyFilter": lambda a: filters.FirstKeyOnlyFilter(*_expect(a)),
    b"ColumnPrefixFilter": lambda a: filters.ColumnPrefixFilter(tuple(_expect(a, bytes))),
    b"MultipleColumnPrefixFilter": _column_prefixes,
    b"SingleColumnValueFilter": lambda a: _single_column_value(a, exclude=False),
    b"SingleColumnValueExcludeFilter": lambda a: _single_column_value(a, exclude=True),
    b"PageFilter": _page,
    b"RowFilter": _compare("row"),
    b"FamilyFilter": _compare("family"),
    b"QualifierFilter": _compare("qualifier"),
    b"ValueFilter": _compare("value"),
}


class _Parser:
    def __init__(self, tokens: list[tuple[str, bytes]]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> tuple[str, bytes] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: bytes | None = None) -> tuple[str, bytes]:
        token = self.peek()
        if token is None or (expected is not None and token[1] != expected):
            wanted = expected.decode() if expected else "a token"
            raise FilterSyntaxError(f"Incorrect filter string: expected {wanted} at token {self.pos}")
        self.pos += 1
        return token

    def expr(self) -> RowFilter:
        children = [self.term()]
        while self.peek() == ("word", b"OR"):
            self.take()
            children.append(self.term())
        return children[0] if len(children) == 1 else filters.OrFilter(children)

    def term(self) -> RowFilter:
        children = [self.unary()]
        while self.peek() == ("word", b"AND"):
            self.take()
            children.append(self.unary())
        return children[0] if len(children) == 1 else filters.AndFilter(children)

    def unary(self) -> RowFilter:
        kind, value = self.take()
        if (kind, value) == ("punct", b"("):
            inner = self.expr()
            self.take(b")")
            return inner
        if kind != "word":
            raise FilterSyntaxError(f"Incorrect filter string: unexpected {value!r}")
        if value in (b"SKIP", b"WHILE"):
            raise FilterSyntaxError(f"the {value.decode()} operator is not supported")
        builder = BUILDERS.get(value)
        if builder is None:
            raise FilterSyntaxError(f"Filter Name {value.decode('utf-8', 'replace')} not supported")
        return builder(self.arguments())

    def arguments(self) -> list[Arg]:
        self.take(b"(")
        args: list[Arg] = []
        while self.peek() != ("punct", b")"):
            if args:
                self.take(b",")
            args.append(self.argument())
        self.take(b")")
        return args

    def argument(self) -> Arg:
        kind, value = self.take()
        if kind == "str":
            return value
        if kind == "op":
            return value.decode()
        if value.lower() in (b"true", b"false"):
            return value.lower() == b"true"
        if re.fullmatch(rb"-?\d+", value):
            return int(value)
        raise FilterSyntaxError(f"Incorrect filter string: bad argument {value!r}")


def parse_filter(text: bytes) -> RowFilter:
    """Parse ``text`` into a fresh filter; Thrift IOError when unsupported or malformed."""
    try:
        parser = _Parser(_tokenize(text))
        result = parser.expr()
        if parser.peek() is not None:
            raise FilterSyntaxError(f"Incorrect filter string: trailing input at token {parser.pos}")
        return result
    except (FilterSyntaxError, re.error) as exc:
        raise errors.unsupported_filter(f"{exc}; filter string {text.decode('utf-8', 'replace')!r}") from None
