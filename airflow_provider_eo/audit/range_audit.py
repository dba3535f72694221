"""One range of a committed epoch, audited: re-read, recomputed, checked in batches.

Contract of :func:`audit_range` (the per-range step of :mod:`.audit_run`): the range is
read with the write task's own reader and consumer settings (``range_reader.read_range``:
``read_committed``, assigned, a throwaway group; nothing committed), cut into the write
step's tasks, mapped and segmented as the writer does (:mod:`.expected_writes`), and
checked in batches of at most ``batch_bytes`` estimated bytes of expected cells as held while
checked (:data:`CELL_HELD_BYTES` each beside their bytes; :mod:`.hbase_view`,
:mod:`.cell_check`): memory stays bounded by that budget, whatever the range's size; each
batch's index entries are then frozen (:meth:`~.window_index.WindowIndex.freeze`). A
range Kafka or HBase cannot serve (topic or table gone) is one ``range_unreadable``
finding. It takes everything as arguments and returns plain values (findings in a
bounded :class:`~.findings.FindingLog`), so it runs in the CLI's process or in a Spark task
(:mod:`.range_jobs`); the window's indexes and candidates are merged before
:func:`~.cell_check.settle`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_eo.audit.cell_check import CellCandidates, CellTally, RangeRef, check_batch
from airflow_provider_eo.audit.dead_letter_check import check_dead_letters
from airflow_provider_eo.audit.expected_writes import ExpectedSegment, ExpectedWrites, task_ranges
from airflow_provider_eo.audit.findings import MAX_FINDINGS, Finding, FindingKind, FindingLog
from airflow_provider_eo.audit.hbase_reads import HBaseReadError, HBaseRowsReader
from airflow_provider_eo.audit.hbase_view import read_plan
from airflow_provider_eo.audit.offset_check import OffsetCounts
from airflow_provider_eo.audit.row_buckets import ONE_BUCKET, RowBuckets
from airflow_provider_eo.audit.window_index import WindowIndex
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.formats.decoder_factory import build_decoder
from airflow_provider_eo.formats.registry.settings import RegistrySettings
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.spark.records import KafkaRecord
from airflow_provider_eo.spark.task.mapping import RecordMapper, build_mapper
from airflow_provider_eo.spark.task.mapping.reachable_fields import value_fields
from airflow_provider_eo.spark.task.range_reader import RangeReadError, read_range
from airflow_provider_eo.spark.task.task_schemas import open_schema_cache
from airflow_provider_eo.spark.task.write_task import READ_AHEAD_SEGMENTS

#: Estimated bytes a batch of expected cells holds while it is checked (HBase reads per batch).
BATCH_BYTES = 16 << 20
#: Estimated bytes one expected cell holds while its batch is checked, beside its row, column
#: and value bytes: the cell's object, HBase's answer in two reads (the newest cells and the
#: cells at its version), the read plan, the checks' sets (tracemalloc of a 20,000-record
#: range audited as one batch: about 970 bytes per cell at the peak).
CELL_HELD_BYTES = 900


@dataclass(frozen=True)
class AuditConnections:
    """What the audit reads through, resolved as the write step resolves them."""

    kafka_config: Mapping[str, str]
    read_timeout_s: float
    hbase_kwargs: Mapping[str, Any]
    hbase_conn_id: str | None = None
    schema_registry: RegistrySettings | None = None


@dataclass
class WindowState:
    """What the ranges of one window share: the index of expected writes, the candidates
    only the whole window settles, the cell counts."""

    index: WindowIndex = field(default_factory=WindowIndex)
    candidates: CellCandidates = field(default_factory=CellCandidates)
    cells: CellTally = field(default_factory=CellTally)


@dataclass
class RangeOutcome:
    """One range's results: final findings (the first ``limit`` kept, every one counted) and
    its offsets' counts (None: not read)."""

    findings: FindingLog = field(default_factory=FindingLog)
    counts: OffsetCounts | None = None


def in_window_of(ranges: Iterable[PartitionRange], field_versions: bool) -> Callable[[int], bool | None]:
    """Whether a version lies inside the audited ``ranges``: under offset versions, inside
    one of them (any partition); under field versions only the expected versions tell (None)."""
    if field_versions:
        return lambda _version: None
    merged: list[list[int]] = []
    for start, end in sorted((r.start, r.end) for r in ranges if r.end > r.start):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    starts = [start for start, _ in merged]

    def inside(version: int) -> bool:
        at = bisect.bisect_right(starts, version) - 1
        return at >= 0 and version < merged[at][1]

    return inside


def audit_range(
    spec: PipelineSpec,
    epoch: Epoch,
    rng: PartitionRange,
    mapper: RecordMapper,
    connections: AuditConnections,
    hbase: HBaseRowsReader,
    ledger_offsets: Sequence[int],
    selection: Mapping[tuple[str, int], Sequence[int]] | None,
    state: WindowState,
    in_window: Callable[[int], bool | None],
    batch_bytes: int = BATCH_BYTES,
    findings_limit: int = MAX_FINDINGS,
    buckets: RowBuckets = ONE_BUCKET,
) -> RangeOutcome:
    """Audit one range of one committed epoch (see the module contract); at most
    ``findings_limit`` findings are kept; only the rows of ``buckets``' bucket are checked
    (the dead letters in its first pass). Raises
    :class:`~.row_buckets.IndexOverBudget` when ``state`` goes over ``buckets.budget``."""
    ref = RangeRef(epoch.epoch_id, rng.topic, rng.partition)
    outcome = RangeOutcome(FindingLog(findings_limit))
    present, bad = 0, []
    read_ahead = max(1 << 20, READ_AHEAD_SEGMENTS * spec.batch_bytes)  # the write task's bound
    writes: ExpectedWrites | None = None
    try:
        for task in task_ranges(rng, spec.spark.split_size, selection):
            writes = ExpectedWrites(mapper, task, spec.batch_size, spec.batch_bytes)
            timeout_s = connections.read_timeout_s
            records = read_range(
                connections.kafka_config, task, spec.batch_size, timeout_s, queue_bytes=read_ahead
            )
            for batch in _batches(writes, records, batch_bytes, buckets, state):
                view = hbase.view(read_plan(batch))
                outcome.findings.extend(
                    check_batch(ref, batch, view, state.index, in_window, state.cells, state.candidates)
                )
                state.index.freeze()  # the batch's entries as sorted arrays: a fraction of the bytes
                buckets.check(state, present + writes.account.present)
            present += writes.account.present
            bad += writes.account.bad
    except (RangeReadError, HBaseReadError) as exc:
        outcome.findings.add(
            Finding(FindingKind.RANGE_UNREADABLE, str(exc), ref.epoch_id, ref.topic, ref.partition, rng.start)
        )
        return outcome
    except ValueError as exc:
        if writes is None or writes.account.unmappable is None:
            raise
        # the writer's segment builder refuses a record (its version contract): the spec changed
        outcome.findings.add(
            Finding(FindingKind.RECORD_UNMAPPABLE, str(exc), ref.epoch_id, ref.topic, ref.partition)
        )
        return outcome
    outcome.counts = OffsetCounts(present, rng.end - rng.start - present, len(bad))
    if selection is not None:  # a replay answers for its selected offsets only
        chosen = set(selection.get(rng.tp, ()))
        ledger_offsets = [offset for offset in ledger_offsets if offset in chosen]
    if buckets.index == 0:
        found = check_dead_letters(epoch.epoch_id, rng, spec.bad_records, bad, ledger_offsets)
        outcome.findings.extend(found)
    return outcome


def _segments(writes: ExpectedWrites, records: Iterator[KafkaRecord]) -> Iterator[ExpectedSegment]:
    for record in records:
        yield from writes.feed(record)
    yield from writes.finish()


def _batches(
    writes: ExpectedWrites,
    records: Iterator[KafkaRecord],
    budget: int,
    buckets: RowBuckets,
    state: WindowState,
) -> Iterator[list[ExpectedSegment]]:
    """The range's expected segments, cut to the bucket's rows (every segment widens the
    window's span), in batches of about ``budget`` bytes of cells."""
    batch: list[ExpectedSegment] = []
    weight = 0
    for whole in _segments(writes, records):
        segment = buckets.part_of(whole)
        if segment is not whole:
            state.index.span_of(whole)
            if not segment.cells and not segment.deletes:
                continue
        batch.append(segment)
        weight += sum(CELL_HELD_BYTES + len(c.row) + len(c.column) + len(c.value) for c in segment.cells)
        weight += CELL_HELD_BYTES * len(segment.deletes)
        if weight >= budget:
            yield batch
            batch, weight = [], 0
    if batch:
        yield batch


def build_audit_mapper(spec: PipelineSpec, connections: AuditConnections) -> tuple[RecordMapper, Any]:
    """The write task's mapper of ``spec`` (``write_task.open_task``'s decoders) and its
    schema cache (None for plain formats; the caller closes it)."""
    cache = open_schema_cache(connections.schema_registry)
    mapper = build_mapper(
        spec.mapping,
        spec.column_family,
        value_decoder=build_decoder(spec.mapping.value_format, "value", cache, value_fields(spec.mapping)),
        key_decoder=build_decoder(spec.mapping.key_format, "key", cache),
        max_cell_bytes=spec.hbase_keyvalue_maxsize,
    )
    return mapper, cache
