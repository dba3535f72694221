"""Run an audit over a window of committed epochs (:func:`audit_window`).

Contract: nothing is written anywhere (HBase is only read, the ledger only read, Kafka
read with throwaway groups; no consumer group or cursor moves). Epochs are audited oldest
first, range by range (:func:`~.range_audit.audit_range`); a range retention deleted
offsets of is listed as not auditable with its vote's counts
(:func:`~.group_check.not_auditable`); then the window's candidates are settled
(:func:`~.cell_check.settle`) and the consumer group is checked
(:func:`~.group_check.check_group`). Findings beyond the log's limit are only counted.
Ranges are jobs (:mod:`.range_jobs`) run by a ``run_ranges`` runner: in this process
(``eo-ledger audit``) or as Spark tasks (the audit DAG's application,
``spark/driver/audit_application.py``); both give the same report, merged here in the
window's order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from airflow_provider_eo.audit import group_check
from airflow_provider_eo.audit.dead_letter_topic_check import check_dead_letter_topic
from airflow_provider_eo.audit.findings import Finding, FindingKind, FindingLog
from airflow_provider_eo.audit.offset_check import OffsetCounts, vote_counts
from airflow_provider_eo.audit.range_audit import BATCH_BYTES, AuditConnections, in_window_of
from airflow_provider_eo.audit.range_jobs import (
    RangeJob,
    RangeRunner,
    RangeSettings,
    run_in_process,
)
from airflow_provider_eo.audit.report import AuditReport
from airflow_provider_eo.audit.row_buckets import INDEX_BUDGET_BYTES
from airflow_provider_eo.audit.window_passes import audit_in_passes
from airflow_provider_eo.clients.connection_settings import KafkaClientConfig
from airflow_provider_eo.config.mapping_syntax import parse_version
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange, ranges_text
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.ledger.model.offsets import TopicPartition

log = logging.getLogger(__name__)


class AuditOffsets(Protocol):
    """What the audit asks Kafka beside the ranges: the partitions' watermarks and the
    group's committed offsets (an ``OffsetSource``, or the driver's Airflow-free reads)."""

    def list_partitions(self, topics: Sequence[str], pattern: str | None) -> list[TopicPartition]: ...

    def watermarks(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]: ...

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], ts_ms: int
    ) -> dict[TopicPartition, int]: ...

    def committed_offsets(
        self, group_id: str, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]: ...


#: A replay epoch's offsets per partition (``EpochProtocol.replay_selection``), None for others.
ReplaySelection = Callable[[int], Mapping[TopicPartition, Sequence[int]] | None]


def _low_watermarks(offsets: AuditOffsets, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
    """Each partition's low watermark; None where Kafka cannot answer (a topic gone: the
    range read then says why)."""
    try:
        return {tp: low for tp, (low, _high) in offsets.watermarks(tps).items()}
    except Exception:  # one partition of a deleted topic fails the batch: ask one by one
        found: dict[TopicPartition, int | None] = {}
        for tp in tps:
            try:
                found[tp] = offsets.watermarks([tp])[tp][0]
            except Exception as exc:
                log.warning("audit: no watermarks of %s[%d]: %s", tp[0], tp[1], exc)
                found[tp] = None
        return found


def audit_window(
    epochs: Sequence[Epoch],
    spec_of: Callable[[Epoch], PipelineSpec],
    ledger: LedgerReads,
    offsets: AuditOffsets,
    connections: AuditConnections,
    *,
    batch_bytes: int = BATCH_BYTES,
    index_budget: int = INDEX_BUDGET_BYTES,
    max_findings: int | None = None,
    replay_selection: ReplaySelection = lambda _epoch_id: None,
    run_ranges: RangeRunner = run_in_process,
) -> AuditReport:
    """Audit the committed ``epochs`` of one pipeline, oldest first (see the module contract);
    ``replay_selection`` answers a replay epoch's selected offsets (None: a plain epoch);
    ``run_ranges`` runs the ranges' jobs (in this process, or as Spark tasks);
    ``index_budget`` bounds the window index's bytes (:mod:`.window_passes`). Raises
    ``ValueError`` for no epoch; what ``run_ranges`` raises passes through."""
    if not epochs:
        raise ValueError("an audit needs at least one committed epoch")
    report = AuditReport(epochs[0].pipeline, [e.epoch_id for e in epochs])
    if max_findings is not None:
        report.findings = FindingLog(max_findings)
    specs = [spec_of(e) for e in epochs]
    field_versions = any(parse_version(s.mapping.version) for s in specs)
    lows = _low_watermarks(offsets, sorted({r.tp for e in epochs for r in e.ranges}))
    audited = [r for e in epochs for r in e.ranges if not group_check.not_auditable(r, lows.get(r.tp))]
    in_window = in_window_of(audited, field_versions)
    planned: list[tuple[Epoch, PartitionRange, OffsetCounts | None]] = []
    for epoch in epochs:
        for rng, voted in vote_counts(epoch).items():
            if rng.end <= rng.start:
                continue
            if group_check.not_auditable(rng, lows.get(rng.tp)):
                report.not_auditable.append(_not_auditable(epoch, rng, voted, lows.get(rng.tp)))
            else:
                planned.append((epoch, rng, voted))
    spec_by_epoch = dict(zip((e.epoch_id for e in epochs), specs, strict=True))
    settings = RangeSettings(connections, in_window, batch_bytes, report.findings.limit)
    first = report
    report = audit_in_passes(
        lambda: _fresh_report(first),
        planned,
        lambda: _jobs(planned, spec_by_epoch, ledger, replay_selection),
        settings,
        run_ranges,
        index_budget,
    )
    report.findings.extend(
        _dead_letter_topic(report, specs[-1], epochs, audited, ledger, offsets, connections)
    )
    report.findings.extend(_group_findings(specs[-1].group_id, epochs, offsets))
    return report


def _jobs(
    planned: Sequence[tuple[Epoch, PartitionRange, OffsetCounts | None]],
    spec_by_epoch: Mapping[int, PipelineSpec],
    ledger: LedgerReads,
    replay_selection: ReplaySelection,
) -> Iterator[RangeJob]:
    """The planned ranges as jobs, their ledger reads done as each is asked for."""
    for index, (epoch, rng, _voted) in enumerate(planned):
        selection = replay_selection(epoch.epoch_id)
        ledger_offsets = ledger.dead_letter_offsets(  # a replay answers for what it did not write
            epoch.pipeline,
            rng.topic,
            rng.partition,
            rng.start,
            rng.end,
            not_resolved_by=None if selection is None else epoch.epoch_id,
        )
        yield RangeJob(index, spec_by_epoch[epoch.epoch_id], epoch, rng, tuple(ledger_offsets), selection)


def _not_auditable(
    epoch: Epoch, rng: PartitionRange, voted: OffsetCounts | None, low: int | None
) -> dict[str, Any]:
    where = f"pipeline={epoch.pipeline} epoch_id={epoch.epoch_id} range={ranges_text([rng])}"
    log.info("audit: not auditable (retention) %s low_watermark=%s", where, low)
    return {
        "epoch_id": epoch.epoch_id,
        **rng.to_summary(),
        "low_watermark": low,
        "vote": None if voted is None else vars(voted),
    }


def _fresh_report(planned: AuditReport) -> AuditReport:
    """A report to fill (one attempt of the passes): ``planned``'s window, limit and
    not-auditable ranges, nothing counted yet."""
    fresh = AuditReport(planned.pipeline, list(planned.epoch_ids), not_auditable=list(planned.not_auditable))
    fresh.findings = FindingLog(planned.findings.limit)
    return fresh


def _dead_letter_topic(
    report: AuditReport,
    spec: PipelineSpec,
    epochs: Sequence[Epoch],
    audited: Sequence[PartitionRange],
    ledger: LedgerReads,
    offsets: AuditOffsets,
    connections: AuditConnections,
) -> list[Finding]:
    """The dead-letter topic's findings (:mod:`.dead_letter_topic_check`); its counts go
    to ``report.dead_letter_topic``."""
    missing = [
        (f.topic, f.partition, f.offset)
        for f in report.findings.kept
        if f.kind == FindingKind.DEAD_LETTER_MISSING and f.topic is not None
        and f.partition is not None and f.offset is not None
    ]  # fmt: skip
    settings = KafkaClientConfig(dict(connections.kafka_config), connections.read_timeout_s)
    found, report.dead_letter_topic = check_dead_letter_topic(
        spec, epochs, audited, ledger, offsets, settings, missing
    )
    return found


def _group_findings(group: str, epochs: Sequence[Epoch], offsets: AuditOffsets) -> list[Finding]:
    """The group's findings; one ``group_unreadable`` when Kafka cannot answer for it."""
    ends = group_check.stream_ends(epochs)
    if not ends:
        return []
    try:
        committed = offsets.committed_offsets(group, sorted(ends))
    except Exception as exc:  # a topic gone, the coordinator unreachable: reported, not a crash
        detail = f"cannot read consumer group {group!r}'s committed offsets: {exc}"
        return [Finding(FindingKind.GROUP_UNREADABLE, detail)]
    return group_check.check_group(group, ends, committed)
