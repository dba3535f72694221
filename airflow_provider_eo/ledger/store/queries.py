"""Read-only views of the ledger: the typed answers the ``eo-ledger`` CLI and the UI share.

Every function runs inside the caller's transaction (it takes a psycopg2 cursor) and
issues a fixed number of statements whatever the number of pipelines:
:func:`pipeline_overviews` reads every pipeline in six. ``pipeline=None`` means every
pipeline; a name restricts the answer to that pipeline. Nothing here writes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.read_model import Gap, OpenEpoch, PipelineOverview
from airflow_provider_eo.ledger.model.states import OPEN_STATES, EpochKind, EpochState


def pipeline_overviews(cur: Any, pipeline: str | None = None) -> list[PipelineOverview]:
    """Every pipeline the ledger knows (or only ``pipeline``; [] if unknown), sorted by
    name, in six statements whatever the number of pipelines."""
    names = pipeline_names(cur, pipeline)
    counts = epoch_counts_by_pipeline(cur, pipeline)
    open_epochs = open_epochs_by_pipeline(cur, pipeline)
    cursors = cursors_by_pipeline(cur, pipeline)
    dead_letters = dead_letter_counts(cur, pipeline)
    gaps = gaps_by_pipeline(cur, pipeline)
    return [
        PipelineOverview(
            name=name,
            epoch_counts=counts.get(name, _every_state({})),
            open_epochs=tuple(open_epochs.get(name, ())),
            cursors=cursors.get(name, {}),
            dead_letters=dead_letters.get(name, 0),
            gaps=tuple(gaps.get(name, ())),
        )
        for name in names
    ]


def pipeline_names(cur: Any, pipeline: str | None = None) -> list[str]:
    """Names of the pipelines in ``eo.pipelines``, sorted."""
    cur.execute(
        """
        SELECT name FROM eo.pipelines
         WHERE (%(pipeline)s::text IS NULL OR name = %(pipeline)s)
         ORDER BY name
        """,
        {"pipeline": pipeline},
    )
    return [name for (name,) in cur.fetchall()]


def epoch_counts_by_pipeline(cur: Any, pipeline: str | None = None) -> dict[str, dict[EpochState, int]]:
    """Number of epochs per state (every state present) of each pipeline that has epochs."""
    cur.execute(
        """
        SELECT pipeline, state, count(*) FROM eo.epochs
         WHERE (%(pipeline)s::text IS NULL OR pipeline = %(pipeline)s)
         GROUP BY pipeline, state
        """,
        {"pipeline": pipeline},
    )
    return {
        name: _every_state({EpochState(state): int(count) for state, count in rows})
        for name, rows in _by_pipeline(cur.fetchall()).items()
    }


def open_epochs_by_pipeline(cur: Any, pipeline: str | None = None) -> dict[str, list[OpenEpoch]]:
    """RESERVED and WRITTEN epochs of each pipeline that has some, oldest first."""
    cur.execute(
        """
        SELECT pipeline, epoch_id, kind, state, run_id FROM eo.epochs
         WHERE state = ANY(%(states)s) AND (%(pipeline)s::text IS NULL OR pipeline = %(pipeline)s)
         ORDER BY pipeline, epoch_id
        """,
        {"pipeline": pipeline, "states": sorted(state.value for state in OPEN_STATES)},
    )
    return {
        name: [
            OpenEpoch(epoch_id, EpochKind(kind), EpochState(state), run_id)
            for epoch_id, kind, state, run_id in rows
        ]
        for name, rows in _by_pipeline(cur.fetchall()).items()
    }


def cursors_by_pipeline(cur: Any, pipeline: str | None = None) -> dict[str, dict[TopicPartition, int]]:
    """Cursor per pinned partition of each pipeline that has pins: the greatest of the
    partition's initial offset, its committed stream epochs' ends and its gaps' ends, as
    stored in ``eo.partitions`` (store/cursors.py keeps it; no epoch history is read)."""
    cur.execute(
        """
        SELECT pipeline, topic, "partition", cursor_offset FROM eo.partitions
         WHERE (%(pipeline)s::text IS NULL OR pipeline = %(pipeline)s)
         ORDER BY pipeline, topic, "partition"
        """,
        {"pipeline": pipeline},
    )
    return {
        name: {(topic, partition): int(cursor) for topic, partition, cursor in rows}
        for name, rows in _by_pipeline(cur.fetchall()).items()
    }


def dead_letter_counts(cur: Any, pipeline: str | None = None) -> dict[str, int]:
    """Number of dead letters of each pipeline that has some."""
    cur.execute(
        """
        SELECT pipeline, count(*) FROM eo.dead_letters
         WHERE (%(pipeline)s::text IS NULL OR pipeline = %(pipeline)s)
         GROUP BY pipeline
        """,
        {"pipeline": pipeline},
    )
    return {name: int(count) for name, count in cur.fetchall()}


def gaps_by_pipeline(cur: Any, pipeline: str | None = None) -> dict[str, list[Gap]]:
    """Recorded gaps of each pipeline that has some, by topic, partition, start."""
    cur.execute(
        """
        SELECT pipeline, topic, "partition", start_offset, end_offset, epoch_id, reason FROM eo.gaps
         WHERE (%(pipeline)s::text IS NULL OR pipeline = %(pipeline)s)
         ORDER BY pipeline, topic, "partition", start_offset
        """,
        {"pipeline": pipeline},
    )
    return {name: [Gap(*row) for row in rows] for name, rows in _by_pipeline(cur.fetchall()).items()}


def _by_pipeline(rows: Iterable[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    """Rows whose first column is the pipeline, grouped by it (the rest of each row kept)."""
    grouped: defaultdict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for name, *rest in rows:
        grouped[name].append(tuple(rest))
    return dict(grouped)


def _every_state(found: Mapping[EpochState, int]) -> dict[EpochState, int]:
    return {state: found.get(state, 0) for state in EpochState}
