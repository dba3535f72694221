"""What the write task wrote for a range: its cells, family deletes and dead letters,
recomputed with the write task's own code (no I/O).

Contract of :class:`ExpectedWrites`: fed a task range's records in offset order (those
Kafka returns; the offsets it does not return are skipped offsets), it maps each with the
pipeline's :class:`~airflow_provider_eo.spark.task.mapping.RecordMapper` and cuts segments
with the writer's :class:`~airflow_provider_eo.spark.hbase_sink.segments.SegmentBuilder`
(same ``batch_size``/``batch_bytes``, a bad record closing the segment as
``write_task.process_range`` does), so every expected cell has exactly the row, column,
version and bytes the writer sent, and every family delete the version it was written at.
Each expected cell and delete names the offset of the record it comes from. Task ranges
are the write step's own split (:func:`task_ranges`): segments never cross a task. A replay
epoch's task (``TaskRange.offsets``) writes only its selected offsets: any other record
closes the segment being built and is neither counted nor mapped, as the writer does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.spark.driver.task_plan import RangeLike, plan_tasks
from airflow_provider_eo.spark.hbase_sink.segments import Segment, SegmentBuilder
from airflow_provider_eo.spark.records import KafkaRecord, RowDelete, RowMutation, TaskRange
from airflow_provider_eo.spark.task.mapping import RecordMapper


@dataclass(frozen=True)
class ExpectedCell:
    """A cell the writer put: ``column`` is ``b"family:qualifier"``; ``offset`` its record's."""

    row: bytes
    column: bytes
    version: int
    value: bytes
    offset: int

    @property
    def family(self) -> bytes:
        """The column's family."""
        return self.column.split(b":", 1)[0]


@dataclass(frozen=True)
class ExpectedDelete:
    """A family delete the writer sent for a tombstone at ``offset``: no cell of ``family``
    at a version ``<= version`` stays visible in ``row``."""

    row: bytes
    family: bytes
    version: int
    offset: int


@dataclass(frozen=True)
class BadRecordSeen:
    """A record the mapping refuses (a dead letter under ``dead_letter``)."""

    offset: int
    reason: str


@dataclass(frozen=True)
class ExpectedSegment:
    """One written segment's expected cells and deletes."""

    cells: tuple[ExpectedCell, ...]
    deletes: tuple[ExpectedDelete, ...]


@dataclass
class RangeAccount:
    """The offsets of one task range as re-read: records present, bad ones, the rest skipped."""

    rng: TaskRange
    present: int = 0
    bad: list[BadRecordSeen] = field(default_factory=list)
    #: A record the writer could not have segmented (its version contract broken): why.
    unmappable: str | None = None

    @property
    def skipped(self) -> int:
        """Offsets of the range without a readable record."""
        return self.rng.end - self.rng.start - self.present


def task_ranges(
    rng: RangeLike, split_size: int, selection: Mapping[tuple[str, int], Sequence[int]] | None = None
) -> list[TaskRange]:
    """The write step's tasks of ``rng`` (``spark.split_size``; a replay epoch's
    ``selection``): segments never cross them."""
    return plan_tasks([rng], split_size, selection)


class ExpectedWrites:
    """Recomputes one task range's writes (see the module contract)."""

    def __init__(self, mapper: RecordMapper, rng: TaskRange, batch_size: int, batch_bytes: int) -> None:
        self.mapper = mapper
        self.account = RangeAccount(rng)
        self._selected = None if rng.offsets is None else frozenset(rng.offsets)
        self._builder = SegmentBuilder(batch_size, batch_bytes)
        #: row -> (version or -1, offset, its columns or None for a delete) of its writers so
        #: far: one entry per record, not per cell
        self._sources: dict[bytes, list[tuple[int, int, Mapping[bytes, bytes] | None]]] = {}

    def feed(self, record: KafkaRecord) -> Iterator[ExpectedSegment]:
        """Take the next record; yields the segments it completes. Raises ValueError when the
        writer's segment builder refuses it (then :attr:`RangeAccount.unmappable` says why)."""
        if self._selected is not None and record.offset not in self._selected:
            yield from map(self._expected, self._builder.skip(record.offset))  # the replay does not write it
            return
        self.account.present += 1
        try:
            mutation: RowMutation | None = self.mapper.map(record)
        except BadRecord as bad:
            self.account.bad.append(BadRecordSeen(record.offset, bad.reason))
            yield from map(self._expected, self._builder.skip(record.offset))
            return
        self._remember(record.offset, mutation)
        try:
            done = self._builder.add(record.offset, mutation)
        except ValueError as exc:
            self.account.unmappable = str(exc)
            raise
        yield from map(self._expected, done)

    def finish(self) -> Iterator[ExpectedSegment]:
        """The range's last segment, if any."""
        last = self._builder.finish()
        if last is not None:
            yield self._expected(last)

    def _remember(self, offset: int, mutation: RowMutation | None) -> None:
        if mutation is None:  # a change envelope's tombstone or ignored truncate: writes nothing
            return
        version = -1 if mutation.version is None else mutation.version
        columns = None if isinstance(mutation, RowDelete) else mutation.cells
        if columns is None or columns:
            self._sources.setdefault(mutation.row, []).append((version, offset, columns))

    def _source(self, row: bytes, column: bytes | None, segment: Segment) -> int:
        """The offset of the record whose value the segment kept for ``row``'s ``column``
        (None: its family delete): the highest version, then the latest offset, among the
        segment's writers of it."""
        first, last = segment.first_offset, segment.last_offset
        best: tuple[int, int] | None = None
        for version, offset, columns in self._sources.get(row, ()):
            wrote = columns is None if column is None else columns is not None and column in columns
            if wrote and first <= offset <= last and (best is None or (version, offset) > best):
                best = (version, offset)
        return last if best is None else best[1]

    def _expected(self, segment: Segment) -> ExpectedSegment:
        stamp = segment.timestamp
        deletes = tuple(
            ExpectedDelete(row, family, stamp, offset)
            for row, families in segment.deletes.items()
            for offset in [self._source(row, None, segment)]
            for family in families
        )
        deletes += tuple(
            ExpectedDelete(row, family, version, self._source(row, None, segment))
            for row, families in segment.versioned_deletes.items()
            for family, version in families.items()
        )
        cells = [
            ExpectedCell(row, column, stamp, value, self._source(row, column, segment))
            for row, columns in segment.puts.items()
            for column, value in columns.items()
        ]
        cells += [
            ExpectedCell(row, column, version, value, self._source(row, column, segment))
            for row, columns in segment.versioned_puts.items()
            for column, (version, value) in columns.items()
        ]
        last = segment.last_offset
        for row in list(self._sources):  # forget this segment's writers and earlier ones
            later = [writer for writer in self._sources[row] if writer[1] > last]
            if later:
                self._sources[row] = later
            else:
                del self._sources[row]
        return ExpectedSegment(tuple(cells), deletes)
