"""The window's ranges audited in passes, one per bucket of rows (:func:`audit_in_passes`).

Contract. A pass runs every range job with its bucket (:class:`~.row_buckets.RowBuckets`),
merges the results in the window's order as they come (an in-process runner's one by
one, so the merged state is checked against the budget after each range), and settles the
bucket's candidates (:func:`~.cell_check.settle`). The offsets' counts and checks, the dead
letters and a range Kafka or HBase cannot serve come from the first pass; later passes add
only their rows' cell findings (a range unreadable in the first pass is not read again). A
pass over the budget raises :class:`~.row_buckets.IndexOverBudget`; the audit then starts
again from a fresh report with :func:`~.row_buckets.buckets_after` buckets (at the
:func:`~.row_buckets.bucket_limit` the budget is no longer checked: rows are not split). The report's
``index`` section says the budget, the buckets, the passes run (every attempt's) and the
peak estimated bytes of the final attempt's merged state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace

from airflow_provider_eo.audit.cell_check import settle
from airflow_provider_eo.audit.offset_check import OffsetCounts, check_offsets
from airflow_provider_eo.audit.range_audit import WindowState
from airflow_provider_eo.audit.range_jobs import (
    RangeJob,
    RangeResult,
    RangeRunner,
    RangeSettings,
    merge_findings,
    merge_state,
)
from airflow_provider_eo.audit.report import AuditReport
from airflow_provider_eo.audit.row_buckets import (
    IndexOverBudget,
    RowBuckets,
    bucket_limit,
    buckets_after,
    state_bytes,
)
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange, ranges_text

log = logging.getLogger(__name__)

Planned = Sequence[tuple[Epoch, PartitionRange, OffsetCounts | None]]


def audit_in_passes(
    new_report: Callable[[], AuditReport],
    planned: Planned,
    jobs: Callable[[], Iterator[RangeJob]],
    settings: RangeSettings,
    run_ranges: RangeRunner,
    budget: int,
) -> AuditReport:
    """The report of ``planned``'s ranges (see the module contract); ``jobs`` makes a pass's
    jobs, ``new_report`` a fresh report. What ``run_ranges`` raises passes through."""
    window_offsets = sum(rng.end - rng.start for _epoch, rng, _voted in planned)
    count, passes = 1, 0
    while True:
        report = new_report()
        peak, unreadable = 0, set[int]()
        try:
            for bucket in range(count):
                passes += 1
                checked = 0 if count >= bucket_limit(window_offsets) else budget  # no finer cut left
                bucket_settings = replace(settings, buckets=RowBuckets(bucket, count, checked))
                peak = max(peak, _one_pass(report, planned, jobs(), bucket_settings, run_ranges, unreadable))
        except IndexOverBudget as over:
            count = buckets_after(count, over, window_offsets, budget)
            log.info(
                "audit: index over its budget pipeline=%s epoch_ids=%d-%d bytes=%d budget=%d buckets=%d",
                report.pipeline, min(report.epoch_ids), max(report.epoch_ids), over.used, budget, count,
            )  # fmt: skip
            continue
        report.index = {"budget_bytes": budget, "buckets": count, "passes": passes, "peak_bytes": peak}
        return report


def _one_pass(
    report: AuditReport,
    planned: Planned,
    jobs: Iterable[RangeJob],
    settings: RangeSettings,
    run_ranges: RangeRunner,
    unreadable: set[int],
) -> int:
    """One bucket's pass into ``report``; returns the peak estimated bytes of its state."""
    buckets = settings.buckets
    state = WindowState(cells=report.cells)
    done = peak = 0
    for result in _in_order(run_ranges(jobs, settings)):
        epoch, rng, voted = planned[result.index]
        if result.over_budget is not None:
            raise IndexOverBudget(result.over_budget.used, done + result.over_budget.offsets_done)
        if buckets.index == 0 and result.counts is None:
            unreadable.add(result.index)
        if buckets.index == 0 or result.index not in unreadable:
            _add_range(report, state, result, epoch, rng, voted, buckets)
        done += rng.end - rng.start
        peak = max(peak, state_bytes(state))
        buckets.check(state, done)
    report.findings.extend(settle(state.index, settings.in_window, state.cells, state.candidates))
    return peak


def _in_order(results: Iterable[RangeResult]) -> Iterator[RangeResult]:
    """``results`` in the window's order, each as soon as the ones before it came (the
    runner is closed when the caller stops early)."""
    waiting: dict[int, RangeResult] = {}
    following = 0
    running = iter(results)
    try:
        for result in running:
            waiting[result.index] = result
            while following in waiting:
                yield waiting.pop(following)
                following += 1
    finally:
        close = getattr(running, "close", None)
        if close is not None:
            close()
    yield from (waiting[index] for index in sorted(waiting))


def _add_range(
    report: AuditReport,
    state: WindowState,
    result: RangeResult,
    epoch: Epoch,
    rng: PartitionRange,
    voted: OffsetCounts | None,
    buckets: RowBuckets,
) -> None:
    """One range's result into the window: findings, state, and in the first pass its
    offset checks and counts."""
    merge_findings(report.findings, result.findings)
    merge_state(state, result.state)
    report.hbase_calls += result.hbase_calls
    if result.counts is not None and buckets.index == 0:
        counts = result.counts
        report.findings.extend(check_offsets(epoch.epoch_id, rng, voted, counts))
        tally = report.offsets
        tally.ranges += 1
        tally.offsets += rng.end - rng.start
        tally.records_written += counts.records - counts.bad_records
        tally.dead_letters += counts.bad_records
        tally.skipped_offsets += counts.skipped_offsets
    where = f"pipeline={epoch.pipeline} epoch_id={epoch.epoch_id} range={ranges_text([rng])}"
    log.info(
        "audit: range done %s bucket=%d/%d findings=%d",
        where,
        buckets.index,
        buckets.count,
        result.findings.total,
    )
