"""Storage of dead-lettered records (``eo.dead_letters``): idempotent upserts, the
pipeline's publish order (``publish_seq``) and the batches the dead-letter topic reads."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any

from psycopg2.extras import execute_values

from airflow_provider_eo.ledger.model.epoch import DeadLetter, SequencedDeadLetter

#: Never touches publish_seq, resolved_by_epoch, resolved_at; a row of a newer epoch stays
#: (a zombie writer of an older epoch, or a late flush of a fenced task, never overwrites it).
_UPSERT = """
INSERT INTO eo.dead_letters
    (pipeline, topic, "partition", "offset", epoch_id, error, key, value, headers,
     error_class, record_timestamp, schema_id)
VALUES %s
ON CONFLICT (pipeline, topic, "partition", "offset") DO UPDATE SET
    epoch_id = EXCLUDED.epoch_id, error = EXCLUDED.error, key = EXCLUDED.key,
    value = EXCLUDED.value, headers = EXCLUDED.headers, error_class = EXCLUDED.error_class,
    record_timestamp = EXCLUDED.record_timestamp, schema_id = EXCLUDED.schema_id,
    recorded_at = now()
WHERE EXCLUDED.epoch_id IS NULL OR eo.dead_letters.epoch_id IS NULL
   OR EXCLUDED.epoch_id >= eo.dead_letters.epoch_id
"""


#: A dead letter's columns as :func:`_sequenced_letter` reads them, its publish number first.
_LETTER_COLUMNS = (
    'publish_seq, topic, "partition", "offset", epoch_id, error, key, value, headers,'
    " error_class, record_timestamp, schema_id"
)


def as_dead_letter(row: DeadLetter | Mapping[str, Any]) -> DeadLetter:
    """Accept a ``DeadLetter`` or a mapping with the same field names."""
    return row if isinstance(row, DeadLetter) else DeadLetter(**row)


def upsert_dead_letters(cur: Any, rows: Iterable[DeadLetter | Mapping[str, Any]]) -> int:
    """Insert or overwrite each record's row (an existing row of a newer epoch is kept);
    returns how many rows were given."""
    letters = [as_dead_letter(row) for row in rows]
    if not letters:
        return 0
    _lock_pipelines(cur, {letter.pipeline for letter in letters})
    values = [
        (
            d.pipeline, d.topic, d.partition, d.offset, d.epoch_id, d.error,
            d.key, d.value, None if d.headers is None else json.dumps(d.headers_json()),
            d.error_class, d.timestamp, d.schema_id,
        )
        for d in letters
    ]  # fmt: skip
    execute_values(cur, _UPSERT, values, template="(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
    return len(letters)


def _lock_pipelines(cur: Any, pipelines: set[str]) -> None:
    for name in sorted(pipelines):
        cur.execute("INSERT INTO eo.pipelines (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (name,))


def count_dead_letters(cur: Any, pipeline: str, epoch_id: int | None = None) -> int:
    """Dead letters of ``pipeline`` (of one epoch if ``epoch_id`` is given)."""
    cur.execute(
        "SELECT count(*) FROM eo.dead_letters WHERE pipeline = %s AND (%s::bigint IS NULL OR epoch_id = %s)",
        (pipeline, epoch_id, epoch_id),
    )
    return int(cur.fetchone()[0])


def dead_letter_offsets(
    cur: Any,
    pipeline: str,
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    not_resolved_by: int | None = None,
) -> list[int]:
    """The dead-lettered offsets of ``pipeline`` in ``[start, end)`` of one partition,
    ascending (``not_resolved_by``: without those that replay epoch wrote)."""
    cur.execute(
        'SELECT "offset" FROM eo.dead_letters WHERE pipeline = %s AND topic = %s AND "partition" = %s'
        ' AND "offset" >= %s AND "offset" < %s'
        ' AND (%s::bigint IS NULL OR resolved_by_epoch IS DISTINCT FROM %s) ORDER BY "offset"',
        (pipeline, topic, partition, start, end, not_resolved_by, not_resolved_by),
    )
    return [int(row[0]) for row in cur.fetchall()]


def dead_letters_in_range(
    cur: Any, pipeline: str, topic: str, partition: int, start: int, end: int
) -> list[tuple[int | None, DeadLetter]]:
    """``(publish_seq or None, letter)`` of ``pipeline``'s dead letters in ``[start, end)``
    of one partition, by offset (what the audit compares the dead-letter topic with)."""
    cur.execute(
        f"SELECT {_LETTER_COLUMNS} FROM eo.dead_letters WHERE pipeline = %s AND topic = %s"
        ' AND "partition" = %s AND "offset" >= %s AND "offset" < %s ORDER BY "offset"',
        (pipeline, topic, partition, start, end),
    )
    return [_sequenced_letter(pipeline, row) for row in cur.fetchall()]


def list_dead_letters(cur: Any, pipeline: str, limit: int | None = None) -> list[dict[str, Any]]:
    """JSON-serializable dead letters (key/value base64) ordered by topic, partition, offset;
    ``resolved_by_epoch`` / ``resolved_at``: the replay that wrote it (None: unresolved)."""
    cur.execute(
        'SELECT topic, "partition", "offset", epoch_id, error, key, value, headers, recorded_at,'
        " error_class, record_timestamp, schema_id, publish_seq, resolved_by_epoch, resolved_at"
        ' FROM eo.dead_letters WHERE pipeline = %s ORDER BY topic, "partition", "offset" LIMIT %s',
        (pipeline, limit),
    )
    return [
        {
            "pipeline": pipeline,
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "epoch_id": epoch_id,
            "error": error,
            "error_class": error_class,
            "timestamp": timestamp,
            "schema_id": schema_id,
            "publish_seq": publish_seq,
            "resolved_by_epoch": resolved_by,
            "resolved_at": None if resolved_at is None else resolved_at.isoformat(),
            "key_b64": None if key is None else base64.b64encode(bytes(key)).decode(),
            "value_b64": None if value is None else base64.b64encode(bytes(value)).decode(),
            "headers": headers,
            "recorded_at": recorded_at.isoformat(),
        }
        for (
            topic, partition, offset, epoch_id, error, key, value, headers, recorded_at,
            error_class, timestamp, schema_id, publish_seq, resolved_by, resolved_at,
        ) in cur.fetchall()
    ]  # fmt: skip


def number_dead_letters_for_publication(cur: Any, pipeline: str, epoch_id: int) -> range:
    """Number the epoch's dead letters that have no ``publish_seq`` yet, consecutively from
    the pipeline's ``dead_letters_sequenced``, ordered by topic, partition, offset, and
    advance that counter; returns the numbers given (empty: none).

    Runs in the transaction that commits the epoch, under the pipeline row's lock, so the
    numbers of a pipeline are committed in order and never given twice.
    """
    cur.execute("SELECT dead_letters_sequenced FROM eo.pipelines WHERE name = %s FOR UPDATE", (pipeline,))
    row = cur.fetchone()
    if row is None:
        return range(0)
    first = int(row[0])
    cur.execute(_NUMBER, {"pipeline": pipeline, "epoch_id": epoch_id, "first": first})
    count = cur.rowcount
    if count:
        cur.execute(
            "UPDATE eo.pipelines SET dead_letters_sequenced = %s WHERE name = %s", (first + count, pipeline)
        )
    return range(first, first + count)


_NUMBER = """
UPDATE eo.dead_letters d SET publish_seq = n.seq
  FROM (SELECT topic, "partition", "offset",
               %(first)s + row_number() OVER (ORDER BY topic, "partition", "offset") - 1 AS seq
          FROM eo.dead_letters
         WHERE epoch_id = %(epoch_id)s AND pipeline = %(pipeline)s AND publish_seq IS NULL) n
 WHERE d.pipeline = %(pipeline)s
   AND (d.topic, d."partition", d."offset") = (n.topic, n."partition", n."offset")
"""

#: One batch in publish order: at most ``limit`` rows, and rows while the bytes before each
#: stay under ``max_bytes`` (> 0, so the first row always comes). Reads the publish-order index.
_BATCH = f"""
SELECT {_LETTER_COLUMNS}
  FROM (SELECT *, sum(coalesce(octet_length(key), 0) + coalesce(octet_length(value), 0))
                      OVER (ORDER BY publish_seq) AS upto,
               coalesce(octet_length(key), 0) + coalesce(octet_length(value), 0) AS size
          FROM eo.dead_letters
         WHERE pipeline = %(pipeline)s AND publish_seq >= %(start)s
         ORDER BY publish_seq
         LIMIT %(limit)s) batch
 WHERE upto - size < %(max_bytes)s
 ORDER BY publish_seq
"""


def dead_letters_to_publish(
    cur: Any, pipeline: str, start: int, limit: int, max_bytes: int
) -> list[SequencedDeadLetter]:
    """The committed dead letters of ``pipeline`` from ``publish_seq`` ``start`` on, in
    publish order: at most ``limit`` of them and about ``max_bytes`` of raw key and value
    (the first one whatever its size). Empty: every numbered letter is before ``start``."""
    cur.execute(_BATCH, {"pipeline": pipeline, "start": start, "limit": limit, "max_bytes": max_bytes})
    letters = [_sequenced_letter(pipeline, row) for row in cur.fetchall()]
    return [SequencedDeadLetter(seq, letter) for seq, letter in letters if seq is not None]  # all numbered


def _sequenced_letter(pipeline: str, row: tuple[Any, ...]) -> tuple[int | None, DeadLetter]:
    """``(publish_seq or None, letter)`` of a row selected as :data:`_LETTER_COLUMNS`."""
    seq, topic, partition, offset, epoch_id, error, key, value, headers, error_class, timestamp, schema_id = (
        row
    )
    letter = DeadLetter(
        pipeline=pipeline, topic=topic, partition=partition, offset=offset, epoch_id=epoch_id,
        error=error, key=None if key is None else bytes(key),
        value=None if value is None else bytes(value), headers=_headers(headers),
        error_class=error_class, timestamp=timestamp, schema_id=schema_id,
    )  # fmt: skip
    return (None if seq is None else int(seq)), letter


def _headers(stored: Any) -> list[tuple[str, bytes | None]] | None:
    """Headers as :meth:`DeadLetter.headers_json` stored them (values base64)."""
    if stored is None:
        return None
    return [(str(name), None if raw is None else base64.b64decode(raw)) for name, raw in stored]
