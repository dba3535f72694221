"""Reading epochs (with their ranges) from ``eo.epochs`` / ``eo.epoch_ranges``."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.refusals import EpochNotFound
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState

EPOCH_COLUMNS = (
    "epoch_id, pipeline, kind, state, fencing_token::text, dag_id, run_id,"
    " created_at, written_at, committed_at, aborted_at, metrics, error, spec_digest"
)


def lock_pipeline(cur: Any, pipeline: str) -> None:
    """Create the pipeline row if absent and lock it until the transaction ends."""
    cur.execute("INSERT INTO eo.pipelines (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (pipeline,))
    cur.execute("SELECT name FROM eo.pipelines WHERE name = %s FOR UPDATE", (pipeline,))


def fetch_epoch(cur: Any, epoch_id: int, *, for_update: bool = False) -> Epoch:
    """The epoch ``epoch_id`` (optionally row-locked); raises ``EpochNotFound``."""
    lock = " FOR UPDATE" if for_update else ""
    cur.execute(f"SELECT {EPOCH_COLUMNS} FROM eo.epochs WHERE epoch_id = %s{lock}", (epoch_id,))
    row = cur.fetchone()
    if row is None:
        raise EpochNotFound(epoch_id)
    return attach_ranges(cur, [row])[0]


def fetch_epochs(cur: Any, wanted: EpochFilter) -> list[Epoch]:
    """Epochs matching ``wanted`` with their ranges, oldest first (two statements)."""
    filters = [
        ("pipeline = %s", wanted.pipeline),
        ("pipeline = ANY(%s)", None if wanted.pipelines is None else sorted(wanted.pipelines)),
        ("state = ANY(%s)", None if wanted.states is None else sorted(s.value for s in wanted.states)),
        ("kind = %s", None if wanted.kind is None else wanted.kind.value),
        ("dag_id = %s", wanted.dag_id),
        ("run_id = %s", wanted.run_id),
        ("epoch_id >= %s", wanted.min_id),
        ("epoch_id <= %s", wanted.max_id),
        ("committed_at >= %s", wanted.committed_since),
    ]
    clauses = [clause for clause, value in filters if value is not None]
    params: list[Any] = [value for _, value in filters if value is not None]
    where = " WHERE " + " AND ".join(clauses) if clauses else ""
    if wanted.limit is None:
        query = f"SELECT {EPOCH_COLUMNS} FROM eo.epochs{where} ORDER BY epoch_id"
    else:  # the newest ``limit``, then oldest first
        query = (
            f"SELECT * FROM (SELECT {EPOCH_COLUMNS} FROM eo.epochs{where}"
            " ORDER BY epoch_id DESC LIMIT %s) AS newest ORDER BY epoch_id"
        )
        params.append(wanted.limit)
    cur.execute(query, params)
    return attach_ranges(cur, cur.fetchall())


def attach_ranges(cur: Any, rows: Sequence[tuple[Any, ...]]) -> list[Epoch]:
    """Build ``Epoch`` objects from ``EPOCH_COLUMNS`` rows, loading all their ranges at once."""
    ids = [row[0] for row in rows]
    ranges: dict[int, list[PartitionRange]] = {epoch_id: [] for epoch_id in ids}
    if ids:
        cur.execute(
            'SELECT epoch_id, topic, "partition", start_offset, end_offset FROM eo.epoch_ranges'
            ' WHERE epoch_id = ANY(%s) ORDER BY epoch_id, topic, "partition"',
            (ids,),
        )
        for epoch_id, topic, partition, start, end in cur.fetchall():
            ranges[epoch_id].append(PartitionRange(topic, partition, start, end))
    return [_epoch(row, tuple(ranges[row[0]])) for row in rows]


def _epoch(row: Sequence[Any], ranges: tuple[PartitionRange, ...]) -> Epoch:
    """An ``Epoch`` from an ``EPOCH_COLUMNS`` row and its ranges."""
    return Epoch(
        epoch_id=row[0],
        pipeline=row[1],
        kind=EpochKind(row[2]),
        state=EpochState(row[3]),
        fencing_token=row[4],
        dag_id=row[5],
        run_id=row[6],
        created_at=row[7],
        written_at=row[8],
        committed_at=row[9],
        aborted_at=row[10],
        metrics=row[11],
        error=row[12],
        ranges=ranges,
        spec_digest=row[13],
    )


def insert_epoch(
    cur: Any,
    pipeline: str,
    kind: EpochKind,
    token: str,
    dag_id: str,
    run_id: str,
    ranges: Sequence[PartitionRange],
    *,
    spec_digest: str | None = None,
) -> Epoch:
    """Insert a RESERVED epoch and its ranges (an INSERT and a COPY whatever their number),
    recording ``spec_digest`` (the spec history's row must exist: ``spec_rows.record_spec``);
    return it as stored, its ranges in (topic, partition) order, without reading it back."""
    cur.execute(
        "INSERT INTO eo.epochs (pipeline, kind, state, fencing_token, dag_id, run_id, spec_digest)"
        f" VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {EPOCH_COLUMNS}",
        (pipeline, kind.value, EpochState.RESERVED.value, token, dag_id, run_id, spec_digest),
    )
    row = cur.fetchone()
    ordered = _in_stored_order(cur, ranges)
    lines = "".join(f"{row[0]}\t{copy_text(r.topic)}\t{r.partition}\t{r.start}\t{r.end}\n" for r in ordered)
    cur.copy_expert(  # COPY: 10,000 rows in half the time of one multi-row INSERT's text
        'COPY eo.epoch_ranges (epoch_id, topic, "partition", start_offset, end_offset) FROM STDIN',
        io.StringIO(lines),
    )
    return _epoch(row, ordered)


def _in_stored_order(cur: Any, ranges: Sequence[PartitionRange]) -> tuple[PartitionRange, ...]:
    """``ranges`` ordered as :func:`attach_ranges` reads them back: by topic in the
    database's collation (asked for the distinct topics only), then by partition."""
    topics = sorted({r.topic for r in ranges})
    if len(topics) > 1:
        cur.execute("SELECT t FROM unnest(%s::text[]) AS t ORDER BY t", (topics,))
        topics = [t for (t,) in cur.fetchall()]
    rank = {topic: i for i, topic in enumerate(topics)}
    return tuple(sorted(ranges, key=lambda r: (rank[r.topic], r.partition)))


def copy_text(value: str) -> str:
    """``value`` escaped for COPY's text format (backslash, tab, newline, carriage return)."""
    return value.translate(_COPY_ESCAPES)


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def pipeline_known(cur: Any, pipeline: str) -> bool:
    """Whether the ledger has a row for ``pipeline`` (read only)."""
    cur.execute("SELECT 1 FROM eo.pipelines WHERE name = %s", (pipeline,))
    return cur.fetchone() is not None
