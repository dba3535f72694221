"""Value types shared by the gateway modules: cells, family settings, column selections.

Column names follow HBase's ``CellUtil.parseColumn``: ``b"cf"`` names a whole
family, ``b"cf:q"`` one column, and ``b"cf:"`` the column with the *empty*
qualifier (HBase 2 semantics).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

LATEST_TIMESTAMP = (1 << 63) - 1
"""HBase's ``HConstants.LATEST_TIMESTAMP``: "now" for writes, "no upper bound" for reads."""

FOREVER_TTL = 2**31 - 1
"""HBase's ``HConstants.FOREVER``: the time_to_live of a family without TTL (seconds)."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One stored version of one column of one row."""

    row: bytes
    family: bytes
    qualifier: bytes
    ts: int
    value: bytes

    @property
    def column(self) -> bytes:
        """``family:qualifier`` as happybase names it."""
        return self.family + b":" + self.qualifier


@dataclass(frozen=True, slots=True)
class FamilySpec:
    """A column family's settings as stored and returned by ``getColumnDescriptors``."""

    name: bytes
    max_versions: int = 3
    compression: str = "NONE"
    in_memory: bool = False
    bloom_filter_type: str = "NONE"
    bloom_filter_vector_size: int = 0
    bloom_filter_nb_hashes: int = 0
    block_cache_enabled: bool = False
    time_to_live: int = FOREVER_TTL

    def oldest_unexpired_ts(self, now_ms: int) -> int:
        """Cells with a timestamp below this are expired by the family's TTL."""
        if self.time_to_live >= FOREVER_TTL:
            return -(1 << 63)
        return now_ms - self.time_to_live * 1000


def parse_column(column: bytes) -> tuple[bytes, bytes | None]:
    """Split ``b"cf:q"`` into ``(b"cf", b"q")``; ``b"cf"`` gives ``(b"cf", None)`` (whole family)."""
    family, sep, qualifier = column.partition(b":")
    if not sep:
        return family, None
    return family, qualifier


class ColumnSelection:
    """Which columns a Get or Scan returns, built as HBase's ``addFamily``/``addColumn`` do.

    ``addFamily`` after ``addColumn`` widens to the whole family; ``addColumn``
    after ``addFamily`` narrows to the listed qualifiers (HBase's Get/Scan maps).
    No column at all selects every family.
    """

    def __init__(self, columns: Iterable[bytes] | None) -> None:
        self.by_family: dict[bytes, set[bytes] | None] = {}
        for column in columns or ():
            family, qualifier = parse_column(column)
            if qualifier is None:
                self.by_family[family] = None
            else:
                selected = self.by_family.get(family)
                if selected is None:
                    selected = set()
                    self.by_family[family] = selected
                selected.add(qualifier)

    @property
    def selects_all(self) -> bool:
        """True when no column was given (every family, every qualifier)."""
        return not self.by_family

    def families(self) -> list[bytes]:
        """The families named by the selection."""
        return list(self.by_family)

    def matches(self, family: bytes, qualifier: bytes) -> bool:
        """Whether a cell of ``family:qualifier`` is selected."""
        if not self.by_family:
            return True
        if family not in self.by_family:
            return False
        qualifiers = self.by_family[family]
        return qualifiers is None or qualifier in qualifiers
