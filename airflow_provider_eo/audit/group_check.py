"""Kafka's side of a window: the consumer group, and ranges retention deleted (no I/O).

Contract. :func:`check_group`: for every partition a committed stream epoch of the
window ended in, the pipeline's consumer group has a committed offset at or past the
highest such end; else ``group_behind`` (backfill epochs never move the group).
:func:`not_auditable`: a range whose start is below the partition's low watermark now
(retention deleted records of it) cannot be re-read; it is reported with its vote's
counts, never as a failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from airflow_provider_eo.audit.findings import Finding, FindingKind
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.states import EpochKind


def stream_ends(epochs: Sequence[Epoch]) -> dict[TopicPartition, tuple[int, int]]:
    """Per partition, the highest end of the window's stream epochs and that epoch's id."""
    ends: dict[TopicPartition, tuple[int, int]] = {}
    for epoch in epochs:
        if epoch.kind != EpochKind.STREAM:
            continue
        for rng in epoch.ranges:
            if rng.end > ends.get(rng.tp, (-1, 0))[0]:
                ends[rng.tp] = (rng.end, epoch.epoch_id)
    return ends


def check_group(
    group_id: str,
    ends: Mapping[TopicPartition, tuple[int, int]],
    committed: Mapping[TopicPartition, int | None],
) -> list[Finding]:
    """One ``group_behind`` finding per partition whose committed offset is below the end."""
    findings = []
    for (topic, partition), (end, epoch_id) in sorted(ends.items()):
        offset = committed.get((topic, partition))
        if offset is None or offset < end:
            held = "no committed offset" if offset is None else f"committed offset {offset}"
            detail = f"consumer group {group_id!r} has {held}, below the committed end {end}"
            findings.append(Finding(FindingKind.GROUP_BEHIND, detail, epoch_id, topic, partition, end))
    return findings


def not_auditable(rng: PartitionRange, low_watermark: int | None) -> bool:
    """True when retention deleted offsets of ``rng`` (its start is below the low watermark)."""
    return low_watermark is not None and rng.start < low_watermark and rng.end > rng.start
