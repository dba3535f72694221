"""The audit's ranges as jobs: what one range needs, what it returns, and how results merge.

Contract. A :class:`RangeJob` is one committed range with everything its audit needs from
the ledger (its epoch, the spec the epoch was written under, the ledger's dead-letter
offsets, a replay's selection), read on the driver; :class:`RangeAuditor` runs jobs with
:func:`~.range_audit.audit_range` wherever it is (the CLI's process, a Spark task), reusing
one mapper per spec and one HBase reader per table, and returns a :class:`RangeResult`
per job: plain, picklable values (findings in a bounded log, offset counts, the range's
own :class:`~.range_audit.WindowState`, its HBase calls). A job whose audit raises
(anything but the budget's :class:`~.row_buckets.IndexOverBudget`) answers
:func:`failed_range`: one ``range_failed`` finding naming the range and the error, no
counts; the rest of the window is still audited. :func:`merge_findings` adds a
range's log to the window's so that the window keeps exactly the findings it would have
kept auditing the ranges one after the other. :func:`run_in_process` is the in-process
:data:`RangeRunner`; the Spark one is ``spark/driver/audit_tasks.py``'s.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_eo.audit.cell_check import InWindow
from airflow_provider_eo.audit.findings import Finding, FindingKind, FindingLog
from airflow_provider_eo.audit.hbase_reads import HBaseRowsReader
from airflow_provider_eo.audit.offset_check import OffsetCounts
from airflow_provider_eo.audit.range_audit import (
    AuditConnections,
    WindowState,
    audit_range,
    build_audit_mapper,
)
from airflow_provider_eo.audit.row_buckets import ONE_BUCKET, IndexOverBudget, RowBuckets
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange, ranges_text
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.spark.task.mapping import RecordMapper

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RangeJob:
    """One committed range to audit; ``index`` is its place in the window (oldest first)."""

    index: int
    spec: PipelineSpec
    epoch: Epoch
    rng: PartitionRange
    ledger_offsets: tuple[int, ...]
    selection: Mapping[TopicPartition, Sequence[int]] | None = None


@dataclass(frozen=True)
class RangeSettings:
    """What every job of a window shares: connections, the window's versions, the bounds."""

    connections: AuditConnections
    in_window: InWindow
    batch_bytes: int
    findings_limit: int
    buckets: RowBuckets = ONE_BUCKET


@dataclass
class RangeResult:
    """One job's answer: its findings (bounded), offset counts (None: not read), the
    window state it built (index, candidates, cell counts) and its HBase calls;
    ``over_budget`` set when its state went over the bucket's byte budget (the rest empty)."""

    index: int
    findings: FindingLog
    counts: OffsetCounts | None
    state: WindowState = field(default_factory=WindowState)
    hbase_calls: int = 0
    over_budget: IndexOverBudget | None = None


#: Runs a window's jobs; answers one result per job, in any order.
RangeRunner = Callable[[Iterable[RangeJob], RangeSettings], Iterable[RangeResult]]


class RangeAuditor:
    """Runs jobs in one process: one mapper per spec, one HBase reader per table (closed
    by :meth:`close`)."""

    def __init__(self, settings: RangeSettings) -> None:
        self.settings = settings
        self._readers: dict[str, HBaseRowsReader] = {}
        self._mappers: dict[str, tuple[RecordMapper, Any]] = {}

    def run(self, job: RangeJob) -> RangeResult:
        """Audit ``job``'s range with a state of its own."""
        settings, spec = self.settings, job.spec
        key = repr(spec.to_dict())
        if key not in self._mappers:
            self._mappers[key] = build_audit_mapper(spec, settings.connections)
        hbase = self._readers.get(spec.hbase_table)
        if hbase is None:
            conn = settings.connections
            hbase = HBaseRowsReader(conn.hbase_kwargs, spec.hbase_table, conn_id=conn.hbase_conn_id)
            self._readers[spec.hbase_table] = hbase
        state = WindowState()
        before = hbase.calls
        try:
            outcome = audit_range(
                spec,
                job.epoch,
                job.rng,
                self._mappers[key][0],
                settings.connections,
                hbase,
                job.ledger_offsets,
                job.selection,
                state,
                settings.in_window,
                settings.batch_bytes,
                settings.findings_limit,
                settings.buckets,
            )
        except IndexOverBudget as over:
            calls = hbase.calls - before
            return RangeResult(job.index, FindingLog(), None, WindowState(), calls, over)
        except Exception as exc:  # one range's failure is its finding, not the audit's end
            return failed_range(job, f"{type(exc).__name__}: {exc}", settings.findings_limit)
        return RangeResult(job.index, outcome.findings, outcome.counts, state, hbase.calls - before)

    def close(self) -> None:
        """Close the readers and schema caches this auditor opened."""
        for reader in self._readers.values():
            reader.close()
        for _mapper, cache in self._mappers.values():
            if cache is not None:
                cache.close()
        self._readers.clear()
        self._mappers.clear()


def failed_range(job: RangeJob, error: str, findings_limit: int) -> RangeResult:
    """``job``'s answer when its audit failed with ``error``: one ``range_failed`` finding
    naming pipeline, epoch, topic/partition/range and the error; no counts (not audited)."""
    rng = job.rng
    where = f"pipeline {job.epoch.pipeline} epoch {job.epoch.epoch_id} range {ranges_text([rng])}"
    log.warning("audit: range failed %s: %s", where, error)
    findings = FindingLog(findings_limit)
    detail = f"{where}: the audit of this range failed: {error}"
    findings.add(
        Finding(FindingKind.RANGE_FAILED, detail, job.epoch.epoch_id, rng.topic, rng.partition, rng.start)
    )
    return RangeResult(job.index, findings, None)


def run_jobs(jobs: Iterable[RangeJob], settings: RangeSettings) -> Iterator[RangeResult]:
    """Audit ``jobs`` one after the other in this process (a Spark task runs its share so)."""
    auditor = RangeAuditor(settings)
    try:
        for job in jobs:
            yield auditor.run(job)
    finally:
        auditor.close()


def run_in_process(jobs: Iterable[RangeJob], settings: RangeSettings) -> Iterator[RangeResult]:
    """The in-process :data:`RangeRunner` (``eo-ledger audit``)."""
    return run_jobs(jobs, settings)


def merge_findings(window: FindingLog, part: FindingLog) -> None:
    """Add ``part``'s findings to ``window``: its kept ones in order, the ones it only
    counted as counts (a window that keeps the first N keeps them from the first parts)."""
    window.extend(part.kept)
    window.counts.update(part.counts - Counter(finding.kind for finding in part.kept))


def merge_state(window: WindowState, part: WindowState) -> None:
    """Add a range's state to the window's: its index, its candidates, its cell counts."""
    window.index.merge(part.index)
    window.candidates.absent.extend(part.candidates.absent)
    window.candidates.observed.extend(part.candidates.observed)
    window.candidates.bytes += part.candidates.bytes
    for name, value in vars(part.cells).items():
        setattr(window.cells, name, getattr(window.cells, name) + value)
