"""One Spark task: read a sub-range, map, segment, write to HBase, report metrics.

Runs on an executor. Everything it needs travels in :class:`TaskSettings` inside
the task closure (resolved on the driver from its environment); executors never
read connection files or environment variables. HBase writes overlap the reading:
segments go out on a writer thread (:mod:`~airflow_provider_eo.spark.task.segment_pipeline`).
Memory is bounded by bytes as well as by count: the reader pre-fetches at most
``READ_AHEAD_SEGMENTS`` segments' worth of bytes, and the task holds at most the segment
being built, the writer thread's queued segments and the one being written, each at most
``batch_bytes`` (or one record heavier than that), plus dead letters up to ``batch_bytes``.
The task either reaches the end of its range and returns :class:`TaskMetrics`, or
raises (range unreadable, bad record under the ``fail`` policy, HBase unwritable): a
partial range is never reported as written. Inside Spark, such an ``EoError`` leaves the executor as an
:class:`~airflow_provider_eo.spark.task.task_errors.ExecutorTaskError` carrying it as data.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from airflow_provider_eo import protocol_points
from airflow_provider_eo.config.specs import BadRecordPolicy, MappingSpec
from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.decoder_factory import build_decoder
from airflow_provider_eo.formats.registry.settings import RegistrySettings
from airflow_provider_eo.spark.hbase_sink.hbase_writer import SegmentWriter
from airflow_provider_eo.spark.hbase_sink.segment_batches import SegmentBatcher
from airflow_provider_eo.spark.hbase_sink.segments import Segment, SegmentBuilder
from airflow_provider_eo.spark.records import KafkaRecord, RowDelete, RowMutation, TaskRange
from airflow_provider_eo.spark.task.bad_records import (
    BadRecordHandler,
    DeadLetterSink,
    LedgerDeadLetterSink,
)
from airflow_provider_eo.spark.task.mapping import RecordMapper, build_mapper
from airflow_provider_eo.spark.task.mapping.reachable_fields import value_fields
from airflow_provider_eo.spark.task.range_reader import RangeConsumer, read_range
from airflow_provider_eo.spark.task.segment_pipeline import SegmentPipeline
from airflow_provider_eo.spark.task.task_schemas import open_schema_cache, registry_schema_id

if TYPE_CHECKING:  # imported by open_schema_cache only for a registry format
    from airflow_provider_eo.formats.registry.schema_cache import SchemaCache

log = logging.getLogger(__name__)

#: The reader's pre-fetch bound, in segments of ``batch_bytes`` (at least 1 MiB).
READ_AHEAD_SEGMENTS = 2


def read_ahead_bytes(settings: TaskSettings) -> int:
    """The reader's pre-fetch bound: :data:`READ_AHEAD_SEGMENTS` segments, at least 1 MiB."""
    return max(1 << 20, READ_AHEAD_SEGMENTS * settings.batch_bytes)


@dataclass(frozen=True)
class TaskSettings:
    """What every task of one epoch needs. Holds secrets: ``repr`` hides them."""

    pipeline: str
    epoch_id: int
    hbase_table: str
    column_family: str
    mapping: MappingSpec
    bad_records: BadRecordPolicy
    batch_size: int
    batch_bytes: int
    hbase_keyvalue_maxsize: int
    read_timeout_s: float
    kafka_config: dict[str, str] = field(repr=False)
    hbase_kwargs: dict[str, Any] = field(repr=False)
    ledger_dsn: str = field(repr=False)
    schema_registry: RegistrySettings | None = field(repr=False, default=None)
    hbase_servers: tuple[tuple[str, int], ...] = ()  # every Thrift server (empty: hbase_kwargs')
    hbase_conn_id: str | None = None  # named in the writer's refusals (None: unknown)
    split_size: int = 100_000  # offsets per Spark task when packing ranges (``spark.split_size``)


@dataclass
class TaskMetrics:
    """Counts of one task (the driver sums them per partition and per epoch).

    ``records`` counts the records read (dead-lettered ones included);
    ``skipped_offsets`` the offsets of ``[start, end)`` that hold no readable record
    (transaction control markers, records of aborted transactions, offsets removed by
    compaction) and, in a replay epoch, the offsets outside its selection (read or not,
    never written), so ``records + skipped_offsets == end - start``.
    ``schema_fetches`` counts the Schema Registry requests of the task (one per schema id
    and per schema reference at most), ``schema_ids`` the schema ids it resolved (ascending).
    """

    topic: str
    partition: int
    start: int
    end: int
    records: int = 0
    skipped_offsets: int = 0
    cells_written: int = 0
    tombstones: int = 0
    changes_skipped: int = 0
    bad_records: int = 0
    bytes: int = 0
    segments: int = 0
    duration_s: float = 0.0
    schema_fetches: int = 0
    schema_ids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (what travels back to the driver)."""
        return asdict(self)


@dataclass
class OpenTask:
    """What one task holds while it runs: its schema cache, mapper (with the decoders), the
    dead-letter sinks and bad-record handler, the HBase writer, its writer thread and the
    segment builder. :func:`close_task` releases it."""

    schema_cache: SchemaCache | None
    mapper: RecordMapper
    ledger_sink: LedgerDeadLetterSink
    handler: BadRecordHandler
    writer: SegmentWriter
    writes: SegmentPipeline
    builder: SegmentBuilder


def open_task(settings: TaskSettings, dead_letter_sink: DeadLetterSink | None, task_index: int) -> OpenTask:
    """Open what a task of ``settings`` needs: the schema cache (registry formats only), the
    mapper with its key and value decoders, the ledger's dead-letter sink and the bad-record
    handler (writing to ``dead_letter_sink`` when given, else the ledger's), the HBase writer
    starting at the Thrift server of ``task_index`` and its writer thread.

    Raises what building the mapper raises (a mapping the decoders cannot serve).
    """
    mapping = settings.mapping
    schema_cache = open_schema_cache(settings.schema_registry)
    mapper = build_mapper(
        mapping,
        settings.column_family,
        value_decoder=build_decoder(mapping.value_format, "value", schema_cache, value_fields(mapping)),
        key_decoder=build_decoder(mapping.key_format, "key", schema_cache),
        max_cell_bytes=settings.hbase_keyvalue_maxsize,
    )
    ledger_sink = LedgerDeadLetterSink(settings.ledger_dsn)
    handler = BadRecordHandler(
        settings.pipeline,
        settings.epoch_id,
        settings.bad_records,
        dead_letter_sink or ledger_sink,
        flush_every=settings.batch_size,
        flush_bytes=settings.batch_bytes,
    )
    writer = SegmentWriter(
        settings.hbase_kwargs,
        settings.hbase_table,
        servers=settings.hbase_servers,
        task_index=task_index,
        connection_id=settings.hbase_conn_id,
    )
    writes = SegmentPipeline(
        writer,
        after_write=lambda _: protocol_points.passed("spark.task.after_segment"),
        batcher=SegmentBatcher(settings.batch_size, settings.batch_bytes),
    )
    builder = SegmentBuilder(settings.batch_size, settings.batch_bytes)
    return OpenTask(schema_cache, mapper, ledger_sink, handler, writer, writes, builder)


def process_range(
    settings: TaskSettings,
    rng: TaskRange,
    task: OpenTask,
    metrics: TaskMetrics,
    reader: RangeConsumer | None = None,
    *,
    wait_writes: bool = True,
) -> None:
    """Read ``rng``, map each record, cut segments, write them, and store the bad records as
    the policy says; returns once every segment is written and every dead letter flushed
    (``wait_writes`` False: see below).

    Counts into ``metrics``: records and bytes read, tombstones (family deletes), changes skipped
    (``envelope: debezium``: the tombstone after a delete, an ignored truncate, a user function's
    None), segments and cells written.
    A replay range (``rng.offsets``) reads from its first to its last selected offset and maps
    only the selected records; any other record there is skipped (not mapped, not a bad
    record) and closes the segment being built, so a replayed record's cells get a version
    below every record it does not write (a newer value stays visible). A dead letter closes
    the segment too (``SegmentBuilder.skip``), so every earlier record is versioned below it
    and its later replay outranks them. Raises on an unreadable range, a bad record under the
    ``fail`` policy or an HBase write that failed: nothing then counts as written. ``reader``:
    the consumer of a packed task (None: one of the range's own). ``wait_writes`` False (a
    packed task's ranges): returns once every segment is handed to the writer thread (its
    last batch may still be filling) and the dead letters are buffered; the caller must call
    the writer thread's ``finish`` and flush the handler before anything counts as written.
    """
    builder = task.builder
    owner = rng.label

    def write(segment: Segment) -> None:
        task.writes.submit(segment, owner)
        metrics.segments += 0 if segment.is_empty() else 1
        metrics.cells_written += segment.cell_count

    span = rng.read_span
    selected = None if rng.offsets is None else frozenset(rng.offsets)
    records: Iterable[KafkaRecord]
    if span is None:
        records = ()
    elif reader is not None:
        records = reader.read(span, settings.batch_size, settings.read_timeout_s)
    else:
        records = read_range(
            settings.kafka_config,
            span,
            settings.batch_size,
            settings.read_timeout_s,
            queue_bytes=read_ahead_bytes(settings),
        )
    for record in records:
        if selected is not None and record.offset not in selected:
            for segment in builder.skip(record.offset):  # the replay does not write it
                write(segment)
            continue
        metrics.records += 1
        metrics.bytes += record.size_bytes
        mutation: RowMutation | None
        try:
            mutation = task.mapper.map(record)
        except BadRecord as bad:
            schema_id = registry_schema_id(settings.mapping, record)
            task.handler.handle(record, bad.reason, error_class=type(bad).__name__, schema_id=schema_id)
            for segment in builder.skip(record.offset):  # a replay of it must outrank what came before
                write(segment)
            continue
        if isinstance(mutation, RowDelete):
            metrics.tombstones += 1
        elif mutation is None:  # a change envelope's tombstone after a delete, an ignored truncate
            metrics.changes_skipped += 1
        for segment in builder.add(record.offset, mutation):
            write(segment)
    last = builder.finish()
    if last is not None:
        write(last)
    if wait_writes:
        task.writes.finish()
        task.handler.flush()


def close_task(task: OpenTask) -> None:
    """Release ``task``: writer thread, HBase writer, ledger sink, schema cache, in that order
    (whether its ranges were written or not)."""
    task.writes.close()
    task.writer.close()
    task.ledger_sink.close()
    if task.schema_cache is not None:
        task.schema_cache.close()


def write_range(
    settings: TaskSettings,
    rng: TaskRange,
    task: OpenTask,
    reader: RangeConsumer | None = None,
    *,
    wait_writes: bool = True,
    log_level: int = logging.INFO,
) -> TaskMetrics:
    """:func:`process_range` of ``rng`` on ``task`` with a segment builder of its own (versions
    derive from its own offsets whatever ran on ``task`` before); returns its metrics: what
    ``task``'s schema cache fetched and its bad records while ``rng`` ran, the offsets of ``rng``
    not read as records, its duration. Raises what :func:`process_range` raises. Its start and
    end are logged at ``log_level`` (a pack's ranges: DEBUG, the pack logs a summary)."""
    started = time.monotonic()
    metrics = TaskMetrics(rng.topic, rng.partition, rng.start, rng.end)
    logged = log.isEnabledFor(log_level)
    fields = f"pipeline={settings.pipeline} epoch_id={settings.epoch_id} range={rng.label}" if logged else ""
    if logged:
        log.log(log_level, "task start %s", fields)
    cache = task.schema_cache
    fetches_before, bad_before = (0 if cache is None else cache.fetches), task.handler.count
    own = replace(task, builder=SegmentBuilder(settings.batch_size, settings.batch_bytes))
    process_range(settings, rng, own, metrics, reader, wait_writes=wait_writes)
    if cache is not None:
        metrics.schema_fetches = cache.fetches - fetches_before
        metrics.schema_ids = list(cache.schema_ids)
    metrics.bad_records = task.handler.count - bad_before
    metrics.skipped_offsets = rng.end - rng.start - metrics.records
    metrics.duration_s = round(time.monotonic() - started, 3)
    if logged:
        log.log(
            log_level,
            "task done %s records=%d skipped_offsets=%d cells=%d tombstones=%d changes_skipped=%d bad=%d "
            "segments=%d",
            fields, metrics.records, metrics.skipped_offsets, metrics.cells_written, metrics.tombstones,
            metrics.changes_skipped, metrics.bad_records, metrics.segments,
        )  # fmt: skip
    return metrics


def run_task(
    settings: TaskSettings,
    rng: TaskRange,
    dead_letter_sink: DeadLetterSink | None = None,
    task_index: int = 0,
) -> TaskMetrics:
    """Write ``rng`` completely or raise; returns the task's metrics.

    ``task_index`` picks the task's first Thrift server (``SegmentWriter``); ``dead_letter_sink``
    (None: the ledger) receives the dead letters. :func:`open_task`, :func:`write_range`
    (what a replay range writes: :func:`process_range`), then :func:`close_task` whatever
    happened.
    """
    task = open_task(settings, dead_letter_sink, task_index)
    try:
        return write_range(settings, rng, task)
    finally:
        close_task(task)
