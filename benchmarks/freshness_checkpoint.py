"""A Structured Streaming checkpoint's micro-batches as :class:`Commit`\\ s (the freshness
benchmark's peer).

Spark writes ``offsets/<id>`` when it plans micro-batch ``id`` (a version line, the batch's
metadata, then one line per source: ``{"topic": {"partition": end offset}}``) and
``commits/<id>`` when the batch has completed (here: after ``foreachBatch`` returned, every
cell written). A batch holds each partition's offsets from the previous batch's end (0 for
the first) to its own; it started at its offsets file's write and completed at its commit
file's (modification times, on this machine's clock like the records' timestamps).

Spark deletes a checkpoint's oldest batches as it goes (it keeps
``spark.sql.streaming.minBatchesToRetain``, 100 by default): the batch after a deleted one
would seem to hold every offset from 0, so :func:`batches_as_commits` raises
:class:`PurgedCheckpointError` unless the batches run from 0 without a gap (the peer keeps
them all: :data:`KEEP_BATCHES`).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.freshness_figures import Commit

KEEP_BATCHES = 1_000_000
"""``spark.sql.streaming.minBatchesToRetain`` of the peer's query: every batch of a run stays."""


class PurgedCheckpointError(RuntimeError):
    """The checkpoint's batches do not run from 0 without a gap: Spark deleted some."""


def batch_ends(offsets_text: str, topic: str) -> dict[int, int]:
    """The end offset of each partition of ``topic`` in an ``offsets/<id>`` file's text."""
    for line in offsets_text.splitlines()[2:]:
        source = json.loads(line) if line.strip().startswith("{") else None
        if isinstance(source, dict) and topic in source:
            return {int(partition): int(end) for partition, end in source[topic].items()}
    raise ValueError(f"no offsets of topic {topic!r} in {offsets_text!r}")


def batches_as_commits(
    ends_by_batch: dict[int, dict[int, int]], times: dict[int, tuple[float, float]]
) -> list[Commit]:
    """Micro-batches (id -> partition -> end offset; id -> (planned, committed) times) as
    commits of their ranges, in id order; only the committed batches (those in ``times``).
    Raises :class:`PurgedCheckpointError` when the ids are not ``0..n`` (a batch's ranges start
    at the previous batch's ends)."""
    if sorted(ends_by_batch) != list(range(len(ends_by_batch))):
        first, last = min(ends_by_batch), max(ends_by_batch)
        raise PurgedCheckpointError(
            f"checkpoint holds {len(ends_by_batch)} batches from {first} to {last}: batches were purged"
        )
    commits = []
    previous: dict[int, int] = {}
    for batch_id in sorted(ends_by_batch):
        ends = ends_by_batch[batch_id]
        ranges = {p: (previous.get(p, 0), end) for p, end in ends.items()}
        previous = {**previous, **ends}
        if batch_id in times:
            started, committed = times[batch_id]
            commits.append(Commit(batch_id, started, committed, ranges))
    return commits


def checkpoint_commits(checkpoint: Path, topic: str) -> list[Commit]:
    """Every committed micro-batch of the query checkpointed in ``checkpoint``."""
    ends_by_batch: dict[int, dict[int, int]] = {}
    times: dict[int, tuple[float, float]] = {}
    for path in (checkpoint / "offsets").iterdir():
        if path.name.isdigit():
            ends_by_batch[int(path.name)] = batch_ends(path.read_text(), topic)
            commit = checkpoint / "commits" / path.name
            if commit.exists():
                times[int(path.name)] = (path.stat().st_mtime, commit.stat().st_mtime)
    return batches_as_commits(ends_by_batch, times)
