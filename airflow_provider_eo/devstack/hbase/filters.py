"""Server-side scan filters of HBase's filter language, evaluated on whole rows.

Every filter maps one row's selected cells (in HBase cell order) to the cells it
keeps, or ``None`` to drop the row. Comparisons follow HBase's ``CompareFilter``:
the comparator compares *its* operand with the cell's bytes, and the operator
says which outcome passes (``<`` keeps cells whose bytes sort below the operand).
Filter objects are stateful per scan (``PageFilter`` counts rows): build new ones
for every scanner.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field, replace
from typing import Protocol

from airflow_provider_eo.devstack.hbase.model import Cell


class RowFilter(Protocol):
    """A filter over one row's cells."""

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        """The kept cells, or None when the row is filtered out."""
        ...


class Comparator(Protocol):
    """HBase ``ByteArrayComparable``: sign of comparing the operand with ``value``."""

    def compare_to(self, value: bytes) -> int:
        """Negative, zero or positive as the operand sorts below, equal or above ``value``."""
        ...


def _sign(a: bytes, b: bytes) -> int:
    return (a > b) - (a < b)


@dataclass(frozen=True)
class BinaryComparator:
    """``binary:operand`` — lexicographic byte comparison."""

    operand: bytes

    def compare_to(self, value: bytes) -> int:
        return _sign(self.operand, value)


@dataclass(frozen=True)
class BinaryPrefixComparator:
    """``binaryprefix:operand`` — compares the operand with the value's prefix of equal length."""

    operand: bytes

    def compare_to(self, value: bytes) -> int:
        return _sign(self.operand, value[: len(self.operand)])


@dataclass(frozen=True)
class RegexStringComparator:
    """``regexstring:pattern`` — 0 when the pattern is found in the value, else 1."""

    pattern: re.Pattern[bytes]

    def compare_to(self, value: bytes) -> int:
        return 0 if self.pattern.search(value) else 1


@dataclass(frozen=True)
class SubstringComparator:
    """``substring:text`` — 0 when the value contains the text (case-insensitive), else 1."""

    operand: bytes

    def compare_to(self, value: bytes) -> int:
        return 0 if self.operand.lower() in value.lower() else 1


_OPERATOR_PASSES = {
    "<": lambda r: r > 0,
    "<=": lambda r: r >= 0,
    "=": lambda r: r == 0,
    "!=": lambda r: r != 0,
    ">=": lambda r: r <= 0,
    ">": lambda r: r < 0,
}
OPERATORS = frozenset(_OPERATOR_PASSES)


def passes(operator: str, comparator: Comparator, value: bytes) -> bool:
    """Whether ``value`` passes ``operator`` against ``comparator`` (HBase CompareFilter rules)."""
    return bool(_OPERATOR_PASSES[operator](comparator.compare_to(value)))


@dataclass
class PrefixFilter:
    """Keeps rows whose key starts with ``prefix``."""

    prefix: bytes

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        return cells if row.startswith(self.prefix) else None


@dataclass
class KeyOnlyFilter:
    """Replaces values by empty bytes (or by their 4-byte length when ``len_as_value``)."""

    len_as_value: bool = False

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        if self.len_as_value:
            return [replace(c, value=struct.pack(">i", len(c.value))) for c in cells]
        return [replace(c, value=b"") for c in cells]


@dataclass
class FirstKeyOnlyFilter:
    """Keeps only the first cell of each row."""

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        return cells[:1]


@dataclass
class ColumnPrefixFilter:
    """Keeps cells whose qualifier starts with one of ``prefixes``."""

    prefixes: tuple[bytes, ...]

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        return [c for c in cells if c.qualifier.startswith(self.prefixes)]


@dataclass
class CompareFilter:
    """RowFilter / FamilyFilter / QualifierFilter / ValueFilter: compare one part of each cell."""

    part: str
    operator: str
    comparator: Comparator

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        if self.part == "row":
            return cells if passes(self.operator, self.comparator, row) else None
        return [c for c in cells if passes(self.operator, self.comparator, getattr(c, self.part))]


@dataclass
class SingleColumnValueFilter:
    """Keeps rows whose ``family:qualifier`` value passes; rows without it unless ``filter_if_missing``."""

    family: bytes
    qualifier: bytes
    operator: str
    comparator: Comparator
    filter_if_missing: bool = False
    latest_version_only: bool = True
    exclude_column: bool = False

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        tested = [c for c in cells if c.family == self.family and c.qualifier == self.qualifier]
        if not tested:
            keep = not self.filter_if_missing
        elif self.latest_version_only:
            keep = passes(self.operator, self.comparator, tested[0].value)
        else:
            keep = any(passes(self.operator, self.comparator, c.value) for c in tested)
        if not keep:
            return None
        if self.exclude_column:
            return [c for c in cells if not (c.family == self.family and c.qualifier == self.qualifier)]
        return cells


@dataclass
class PageFilter:
    """Keeps at most ``page_size`` rows of the scan (the gateway has one region)."""

    page_size: int
    accepted: int = field(default=0)

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        if self.accepted >= self.page_size:
            return None
        self.accepted += 1
        return cells


@dataclass
class AndFilter:
    """``A AND B``: filters applied in order, each seeing what the previous kept."""

    children: list[RowFilter]

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        kept = cells
        for child in self.children:
            result = child.apply(row, kept)
            if result is None:
                return None
            kept = result
        return kept


@dataclass
class OrFilter:
    """``A OR B``: the row passes when any child keeps it; kept cells are the union, first wins."""

    children: list[RowFilter]

    def apply(self, row: bytes, cells: list[Cell]) -> list[Cell] | None:
        results = [child.apply(row, cells) for child in self.children]
        if all(r is None for r in results):
            return None
        union: dict[tuple[bytes, bytes, int], Cell] = {}
        for kept in results:
            for cell in kept or ():
                union.setdefault((cell.family, cell.qualifier, cell.ts), cell)
        return sorted(union.values(), key=lambda c: (c.family, c.qualifier, -c.ts))
