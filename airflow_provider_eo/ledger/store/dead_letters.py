"""Storage of dead-lettered records (``eo.dead_letters``), idempotent under replays."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any

from psycopg2.extras import execute_values

from airflow_provider_eo.ledger.models import DeadLetter

_UPSERT = (
    "INSERT INTO eo.dead_letters"
    ' (pipeline, topic, "partition", "offset", epoch_id, error, key, value, headers)'
    " VALUES %s"
    ' ON CONFLICT (pipeline, topic, "partition", "offset") DO UPDATE SET'
    " epoch_id = EXCLUDED.epoch_id, error = EXCLUDED.error, key = EXCLUDED.key,"
    " value = EXCLUDED.value, headers = EXCLUDED.headers, recorded_at = now()"
)


def as_dead_letter(row: DeadLetter | Mapping[str, Any]) -> DeadLetter:
    """Accept a ``DeadLetter`` or a mapping with the same field names."""
    return row if isinstance(row, DeadLetter) else DeadLetter(**row)


def upsert_dead_letters(cur: Any, rows: Iterable[DeadLetter | Mapping[str, Any]]) -> int:
    """Insert or overwrite each record's row; returns how many rows were given."""
    letters = [as_dead_letter(row) for row in rows]
    if not letters:
        return 0
    _lock_pipelines(cur, {letter.pipeline for letter in letters})
    values = [
        (
            d.pipeline, d.topic, d.partition, d.offset, d.epoch_id, d.error,
            d.key, d.value, None if d.headers is None else json.dumps(d.headers_json()),
        )
        for d in letters
    ]  # fmt: skip
    execute_values(cur, _UPSERT, values)
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


def list_dead_letters(cur: Any, pipeline: str, limit: int | None = None) -> list[dict[str, Any]]:
    """JSON-serializable dead letters (key/value base64) ordered by topic, partition, offset."""
    cur.execute(
        'SELECT topic, "partition", "offset", epoch_id, error, key, value, headers, recorded_at'
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
            "key_b64": None if key is None else base64.b64encode(bytes(key)).decode(),
            "value_b64": None if value is None else base64.b64encode(bytes(value)).decode(),
            "headers": headers,
            "recorded_at": recorded_at.isoformat(),
        }
        for topic, partition, offset, epoch_id, error, key, value, headers, recorded_at in cur.fetchall()
    ]
