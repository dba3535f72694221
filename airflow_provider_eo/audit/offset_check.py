"""Offsets: every offset of a committed range is a record written, a dead letter or
skipped, and the vote's counts say so (no I/O).

Contract of :func:`check_offsets`: the vote's counts of a range (``metrics.partitions``)
must add up (``records + skipped_offsets`` is the range's size), else one
``vote_counts_do_not_add_up`` finding; when they add up they must equal what Kafka
answers now (records present, offsets absent, records the mapping refuses), else one
``vote_counts_differ`` finding naming both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_eo.audit.findings import Finding, FindingKind
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange


@dataclass(frozen=True)
class OffsetCounts:
    """A range's offsets by fate: records read (dead letters included), skipped, bad."""

    records: int
    skipped_offsets: int
    bad_records: int

    def text(self) -> str:
        """``records=.. skipped_offsets=.. bad_records=..``."""
        return f"records={self.records} skipped_offsets={self.skipped_offsets} bad_records={self.bad_records}"


def vote_counts(epoch: Epoch) -> dict[PartitionRange, OffsetCounts | None]:
    """Each range's counts in the epoch's vote (None: the vote has none for it)."""
    voted: dict[tuple[str, int, int, int], Mapping[str, Any]] = {
        (p["topic"], p["partition"], p["start"], p["end"]): p
        for p in (epoch.metrics or {}).get("partitions", [])
    }
    found: dict[PartitionRange, OffsetCounts | None] = {}
    for rng in epoch.ranges:
        item = voted.get((rng.topic, rng.partition, rng.start, rng.end))
        found[rng] = (
            None
            if item is None
            else OffsetCounts(
                int(item.get("records", 0)),
                int(item.get("skipped_offsets", 0)),
                int(item.get("bad_records", 0)),
            )
        )
    return found


def check_offsets(
    epoch_id: int, rng: PartitionRange, voted: OffsetCounts | None, reread: OffsetCounts
) -> list[Finding]:
    """The range's offset findings (see the module contract)."""
    where = (epoch_id, rng.topic, rng.partition, rng.start)
    size = rng.end - rng.start
    if voted is None:
        return [
            Finding(FindingKind.VOTE_COUNTS_DO_NOT_ADD_UP, "the vote has no counts for this range", *where)
        ]
    if voted.records + voted.skipped_offsets != size:
        detail = (
            f"the vote counts {voted.text()}: records + skipped_offsets = "
            f"{voted.records + voted.skipped_offsets}, the range [{rng.start}, {rng.end}) has {size} offsets"
        )
        return [Finding(FindingKind.VOTE_COUNTS_DO_NOT_ADD_UP, detail, *where)]
    if voted != reread:
        detail = f"the vote counts {voted.text()}, Kafka and the mapping now give {reread.text()}"
        return [Finding(FindingKind.VOTE_COUNTS_DIFFER, detail, *where)]
    return []
