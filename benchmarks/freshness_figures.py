"""The freshness benchmark's pure parts: records matched to the epoch (or micro-batch) that
committed them, and the percentiles of their freshness.

A :class:`ProducedRecord` is one record's partition, offset and produce time (its Kafka
record timestamp); a :class:`Commit` is one epoch's or micro-batch's offset ranges and the
time it committed. :func:`match_records` gives every record its commit and raises when a
record has none or more than one, so a broken run cannot report a good figure.
:func:`caught_up` says when a query's commits have stopped carrying a backlog.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProducedRecord:
    """One produced record: where it landed and its Kafka record timestamp (epoch seconds)."""

    partition: int
    offset: int
    produced_at: float


@dataclass(frozen=True)
class Commit:
    """One epoch or micro-batch: ``ranges`` maps a partition to its ``[start, end)`` offsets;
    ``started_at`` and ``committed_at`` in epoch seconds."""

    commit_id: int
    started_at: float
    committed_at: float
    ranges: Mapping[int, tuple[int, int]]

    @property
    def records(self) -> int:
        """Offsets its ranges hold."""
        return sum(end - start for start, end in self.ranges.values())


class MatchError(RuntimeError):
    """A record that no commit holds or that two commits hold (overlapping ranges)."""


def match_records(
    records: Iterable[ProducedRecord], commits: Sequence[Commit]
) -> list[tuple[ProducedRecord, Commit]]:
    """Every record with the one commit whose range of its partition holds its offset.

    Raises :class:`MatchError` when two commits' ranges of a partition overlap or a record
    is in no commit's range."""
    starts: dict[int, list[tuple[int, int, Commit]]] = {}
    for commit in commits:
        for partition, (start, end) in commit.ranges.items():
            if start < end:
                starts.setdefault(partition, []).append((start, end, commit))
    for partition, spans in starts.items():
        spans.sort(key=lambda span: span[0])
        for (_, end, first), (start, _, second) in itertools.pairwise(spans):
            if start < end:
                pair = f"commits {first.commit_id} and {second.commit_id}"
                raise MatchError(f"partition {partition}: {pair} overlap at {start}")
    keys = {partition: [span[0] for span in spans] for partition, spans in starts.items()}
    matched = []
    for record in records:
        spans = starts.get(record.partition, [])
        index = bisect.bisect_right(keys.get(record.partition, []), record.offset) - 1
        if index < 0 or not spans[index][0] <= record.offset < spans[index][1]:
            raise MatchError(f"record {record.partition}@{record.offset}: in no commit's range")
        matched.append((record, spans[index][2]))
    return matched


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by the nearest-rank method: the smallest value with at
    least ``q`` percent of the values at or below it. Raises ValueError when ``values`` is empty."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def freshness_summary(matched: Sequence[tuple[ProducedRecord, Commit]]) -> dict[str, Any]:
    """The records' freshness (commit time minus produce time): count, p50, p99, max; and the
    commits that hold them: count, duration (started to committed) p50 and max, and the
    p50 of the interval between consecutive commits."""
    seconds = [commit.committed_at - record.produced_at for record, commit in matched]
    commits = sorted(
        {commit.commit_id: commit for _, commit in matched}.values(), key=lambda c: c.committed_at
    )
    durations = [c.committed_at - c.started_at for c in commits]
    gaps = [b.committed_at - a.committed_at for a, b in itertools.pairwise(commits)]
    return {
        "records": len(seconds),
        "p50_s": round(percentile(seconds, 50), 3),
        "p99_s": round(percentile(seconds, 99), 3),
        "max_s": round(max(seconds), 3),
        "commits": len(commits),
        "commit_duration_p50_s": round(percentile(durations, 50), 3),
        "commit_duration_max_s": round(max(durations), 3),
        "commit_interval_p50_s": round(percentile(gaps, 50), 3) if gaps else None,
    }


def oldest_produced(commit: Commit, produced_at: Mapping[tuple[int, int], float]) -> float | None:
    """The produce time of the oldest record ``commit`` holds (the first offset of each of its
    non-empty ranges); None when it holds none or one of them is not in ``produced_at``."""
    firsts = [produced_at.get((p, start)) for p, (start, end) in commit.ranges.items() if start < end]
    if not firsts or any(first is None for first in firsts):
        return None
    return min(first for first in firsts if first is not None)


def caught_up(
    commits: Sequence[Commit], produced_at: Mapping[tuple[int, int], float], batches: int, slack_s: float
) -> bool:
    """Whether each of the last ``batches`` commits holding records (before the newest) read
    every record produced up to ``slack_s`` before it started: the next such commit's oldest
    record was produced at or after that start minus ``slack_s``. A query reading a backlog
    (its lag more than the records one trigger brings) leaves older records to the next
    commit; a caught-up one leaves only those produced while it ran. ``produced_at`` maps
    ``(partition, offset)`` to the record's produce time."""
    holding = [commit for commit in commits if commit.records]
    if len(holding) < batches + 1:
        return False
    for before, after in itertools.pairwise(holding[-batches - 1 :]):
        oldest = oldest_produced(after, produced_at)
        if oldest is None or oldest < before.started_at - slack_s:
            return False
    return True
