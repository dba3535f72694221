"""Run an audit over a window of committed epochs (:func:`audit_window`).

Contract: nothing is written anywhere (HBase is only read, the ledger only read, Kafka
read with throwaway groups; no consumer group or cursor moves). Epochs are audited oldest
first, range by range (:func:`~.range_audit.audit_range`); a range retention deleted
offsets of is listed as not auditable with its vote's counts
(:func:`~.group_check.not_auditable`); then the window's candidates are settled
(:func:`~.cell_check.settle`) and the consumer group is checked
(:func:`~.group_check.check_group`). Findings beyond the log's limit are only counted.
This slice runs in-process; every range's step is :func:`~.range_audit.audit_range`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow_provider_eo.audit import group_check
from airflow_provider_eo.audit.cell_check import settle
from airflow_provider_eo.audit.dead_letter_topic_check import check_dead_letter_topic
from airflow_provider_eo.audit.findings import Finding, FindingKind, FindingLog
from airflow_provider_eo.audit.hbase_reads import HBaseRowsReader
from airflow_provider_eo.audit.offset_check import OffsetCounts, check_offsets, vote_counts
from airflow_provider_eo.audit.range_audit import (
    BATCH_BYTES,
    AuditConnections,
    WindowState,
    audit_range,
    build_audit_mapper,
    in_window_of,
)
from airflow_provider_eo.audit.report import AuditReport
from airflow_provider_eo.clients.connection_settings import KafkaClientConfig
from airflow_provider_eo.config.mapping_syntax import parse_version
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange, ranges_text
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.ledger.model.offsets import OffsetSource, TopicPartition
from airflow_provider_eo.spark.task.mapping import RecordMapper

log = logging.getLogger(__name__)

#: A replay epoch's offsets per partition (``EpochProtocol.replay_selection``), None for others.
ReplaySelection = Callable[[int], Mapping[TopicPartition, Sequence[int]] | None]


def _low_watermarks(offsets: OffsetSource, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
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
    offsets: OffsetSource,
    connections: AuditConnections,
    *,
    batch_bytes: int = BATCH_BYTES,
    max_findings: int | None = None,
    replay_selection: ReplaySelection = lambda _epoch_id: None,
) -> AuditReport:
    """Audit the committed ``epochs`` of one pipeline, oldest first (see the module contract);
    ``replay_selection`` answers a replay epoch's selected offsets (None: a plain epoch).
    Raises ``ValueError`` for no epoch."""
    if not epochs:
        raise ValueError("an audit needs at least one committed epoch")
    pipeline = epochs[0].pipeline
    report = AuditReport(pipeline, [e.epoch_id for e in epochs])
    if max_findings is not None:
        report.findings = FindingLog(max_findings)
    specs = [spec_of(e) for e in epochs]
    field_versions = any(parse_version(s.mapping.version) for s in specs)
    tps = sorted({r.tp for e in epochs for r in e.ranges})
    lows = _low_watermarks(offsets, tps)
    audited = [r for e in epochs for r in e.ranges if not group_check.not_auditable(r, lows.get(r.tp))]
    in_window = in_window_of(audited, field_versions)
    state = WindowState(cells=report.cells)
    readers: dict[str, HBaseRowsReader] = {}
    mappers: dict[int, tuple[RecordMapper, Any]] = {}
    try:
        for epoch, spec in zip(epochs, specs, strict=True):
            mapper = mappers.setdefault(id(spec), build_audit_mapper(spec, connections))[0]
            hbase = readers.setdefault(
                spec.hbase_table,
                HBaseRowsReader(
                    connections.hbase_kwargs, spec.hbase_table, conn_id=connections.hbase_conn_id
                ),
            )
            selection = replay_selection(epoch.epoch_id)
            for rng, voted in vote_counts(epoch).items():
                if rng.end <= rng.start:
                    continue
                _audit_one(
                    report,
                    epoch,
                    rng,
                    voted,
                    lows.get(rng.tp),
                    spec,
                    mapper,
                    connections,
                    hbase,
                    ledger,
                    selection,
                    state,
                    in_window,
                    batch_bytes,
                )
        report.findings.extend(settle(state.index, in_window, state.cells, state.candidates))
        report.findings.extend(
            _dead_letter_topic(report, specs[-1], epochs, audited, ledger, offsets, connections)
        )
        report.findings.extend(_group_findings(specs[-1].group_id, epochs, offsets))
    finally:
        report.hbase_calls = sum(reader.calls for reader in readers.values())
        for reader in readers.values():
            reader.close()
        for _mapper, cache in mappers.values():
            if cache is not None:
                cache.close()
    return report


def _dead_letter_topic(
    report: AuditReport,
    spec: PipelineSpec,
    epochs: Sequence[Epoch],
    audited: Sequence[PartitionRange],
    ledger: LedgerReads,
    offsets: OffsetSource,
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


def _group_findings(group: str, epochs: Sequence[Epoch], offsets: OffsetSource) -> list[Finding]:
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


def _audit_one(
    report: AuditReport,
    epoch: Epoch,
    rng: PartitionRange,
    voted: OffsetCounts | None,
    low: int | None,
    spec: PipelineSpec,
    mapper: RecordMapper,
    connections: AuditConnections,
    hbase: HBaseRowsReader,
    ledger: LedgerReads,
    selection: Mapping[TopicPartition, Sequence[int]] | None,
    state: WindowState,
    in_window: Callable[[int], bool | None],
    batch_bytes: int,
) -> None:
    where = f"pipeline={epoch.pipeline} epoch_id={epoch.epoch_id} range={ranges_text([rng])}"
    if group_check.not_auditable(rng, low):
        log.info("audit: not auditable (retention) %s low_watermark=%s", where, low)
        report.not_auditable.append(
            {
                "epoch_id": epoch.epoch_id,
                **rng.to_summary(),
                "low_watermark": low,
                "vote": None if voted is None else vars(voted),
            }
        )
        return
    ledger_offsets = ledger.dead_letter_offsets(  # a replay answers for what it did not write
        epoch.pipeline,
        rng.topic,
        rng.partition,
        rng.start,
        rng.end,
        not_resolved_by=None if selection is None else epoch.epoch_id,
    )
    outcome = audit_range(
        spec, epoch, rng, mapper, connections, hbase, ledger_offsets, selection, state, in_window, batch_bytes
    )
    report.findings.extend(outcome.findings)
    if outcome.counts is not None:
        counts = outcome.counts
        report.findings.extend(check_offsets(epoch.epoch_id, rng, voted, counts))
        tally = report.offsets
        tally.ranges += 1
        tally.offsets += rng.end - rng.start
        tally.records_written += counts.records - counts.bad_records
        tally.dead_letters += counts.bad_records
        tally.skipped_offsets += counts.skipped_offsets
    log.info("audit: range done %s findings=%d", where, len(outcome.findings))
