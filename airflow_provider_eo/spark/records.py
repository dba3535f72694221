"""Value types that flow through a write task: Kafka records in, row mutations out.

A :class:`KafkaRecord` is one record as read from the broker (raw bytes, never
decoded here). The mapping turns it into a :class:`RowPut` (cells to set) or a
:class:`RowDelete` (the row's column family is deleted as of the record's
version). Column names are full HBase column names ``b"family:qualifier"``.

``version`` is the HBase cell version a mutation asks for: ``None`` (the default, and
``mapping.version: offset``) means "the version of the record's segment", derived from
Kafka offsets; an int (``mapping.version: field:<path>``) is written as the cells' own
version (``spark/hbase_sink/segments.py``). A delete carries one under field versions (a
Debezium delete event's position, a tombstone's ``tombstone_version``), never otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class KafkaRecord:
    """One Kafka record exactly as stored on the broker."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None

    @property
    def size_bytes(self) -> int:
        """Key plus value length in bytes (headers excluded)."""
        return len(self.key or b"") + len(self.value or b"")


@dataclass(frozen=True)
class RowPut:
    """Set ``cells`` (``b"family:qualifier" -> value``) on ``row``; ``version`` is the cell
    version a ``version: field:...`` mapping read from the record (None: from the offset)."""

    row: bytes
    cells: dict[bytes, bytes] = field(default_factory=dict)
    version: int | None = None

    @cached_property
    def size_bytes(self) -> int:
        """What the put weighs in a Thrift call: per cell, row + column + value bytes."""
        cells = self.cells
        return len(self.row) * len(cells) + sum(map(len, cells)) + sum(map(len, cells.values()))


@dataclass(frozen=True)
class RowDelete:
    """Delete ``families`` of ``row`` (every version up to the segment timestamp, or up to
    ``version`` when a ``version: field:...`` mapping set it)."""

    row: bytes
    families: tuple[bytes, ...]
    version: int | None = None

    @cached_property
    def size_bytes(self) -> int:
        """What the delete weighs in a Thrift call: per family, row + family bytes."""
        return sum(len(self.row) + len(family) for family in self.families)


RowMutation = RowPut | RowDelete


@dataclass(frozen=True)
class TaskRange:
    """One Spark task's share of a partition range: offsets ``[start, end)``.

    ``offsets`` None: the task writes every record of the range; a tuple (a replay
    epoch's selection inside ``[start, end)``, ascending, maybe empty): only those.
    """

    topic: str
    partition: int
    start: int
    end: int
    offsets: tuple[int, ...] | None = None

    @property
    def read_span(self) -> TaskRange | None:
        """What the task reads: the whole range, or from its first to its last selected
        offset (None: a selection with no offset here, nothing to read)."""
        if self.offsets is None:
            return self
        if not self.offsets:
            return None
        return TaskRange(self.topic, self.partition, self.offsets[0], self.offsets[-1] + 1)

    @property
    def label(self) -> str:
        """``topic/partition[start,end)`` for logs and error messages."""
        return f"{self.topic}/{self.partition}[{self.start},{self.end})"
