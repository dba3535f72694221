"""``eo.lag_samples`` / ``eo.lag_sample_partitions`` (migration 0005): writing a sample,
reading a window of them for the charts. Deleting them is retention's
(store/sample_retention.py).

A sample is written in two statements whatever its number of partitions (the header's
INSERT, then one COPY of its partition rows). A window is read in at most three, each
bounded: at most ``max_samples`` samples (every k-th of the window's, newest first, when
it holds more) and, of each, at most ``max_partitions`` partitions (those with the
largest lag in the newest sample), plus every sample's total lag from its header.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from airflow_provider_eo.ledger.model.chart_figures import LagWindow, StoredSample
from airflow_provider_eo.ledger.model.lag import LagSample, SampledPartition
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.store.epoch_rows import copy_text


def insert_lag_sample(cur: Any, sample: LagSample) -> int:
    """Store ``sample`` (the database's clock stamps it); returns its ``sample_id``."""
    cur.execute(
        "INSERT INTO eo.lag_samples (pipeline, source, epoch_id, partitions, total_lag)"
        " VALUES (%s, %s, %s, %s, %s) RETURNING sample_id",
        (sample.pipeline, sample.source, sample.epoch_id, len(sample.partitions), sample.total_lag),
    )
    sample_id = int(cur.fetchone()[0])
    lines = "".join(
        f"{sample_id}\t{copy_text(p.topic)}\t{p.partition}\t{p.cursor}\t{p.high_watermark}\t{p.lag}\n"
        for p in sample.partitions
    )
    cur.copy_expert(
        'COPY eo.lag_sample_partitions (sample_id, topic, "partition", cursor_offset, high_watermark, lag)'
        " FROM STDIN",
        io.StringIO(lines),
    )
    return sample_id


def lag_window(
    cur: Any, pipeline: str, since: datetime, *, max_samples: int, max_partitions: int
) -> LagWindow:
    """``pipeline``'s samples taken at or after ``since`` (see the module doc for the bounds)."""
    cur.execute(
        """
        SELECT sample_id, sampled_at, source, epoch_id, partitions, total_lag, n FROM (
            SELECT s.*, count(*) OVER () AS n,
                   row_number() OVER (ORDER BY sampled_at DESC, sample_id DESC) - 1 AS age
              FROM eo.lag_samples s
             WHERE pipeline = %(pipeline)s AND sampled_at >= %(since)s) w
         WHERE age %% ceil(n::numeric / %(max)s)::bigint = 0
         ORDER BY sampled_at, sample_id
        """,
        {"pipeline": pipeline, "since": since, "max": max_samples},
    )
    headers = cur.fetchall()
    if not headers:
        return LagWindow((), 0, 1, 0, ())
    in_window = int(headers[0][6])
    newest = headers[-1]
    cur.execute(
        'SELECT topic, "partition" FROM eo.lag_sample_partitions WHERE sample_id = %s'
        ' ORDER BY lag DESC, topic, "partition" LIMIT %s',
        (newest[0], max_partitions),
    )
    shown = sorted((topic, int(partition)) for topic, partition in cur.fetchall())
    rows = _partition_rows(cur, [h[0] for h in headers], shown)
    samples = tuple(
        StoredSample(int(h[0]), h[1], h[2], h[3], int(h[4]), int(h[5]), tuple(rows.get(h[0], ())))
        for h in headers
    )
    every = max(1, math.ceil(in_window / max_samples))
    return LagWindow(samples, in_window, every, int(newest[4]), tuple(shown))


def _partition_rows(
    cur: Any, sample_ids: Sequence[int], shown: Sequence[TopicPartition]
) -> dict[int, list[SampledPartition]]:
    """The rows of ``shown`` partitions of each of ``sample_ids``, in one statement of at most
    ``len(sample_ids) * len(shown)`` index lookups."""
    if not shown:
        return {}
    keys = [(sample_id, topic, partition) for sample_id in sample_ids for topic, partition in shown]
    cur.execute(  # every (sample, partition) key named: primary-key lookups, never a sample's every row
        """
        SELECT p.sample_id, p.topic, p."partition", p.cursor_offset, p.high_watermark, p.lag
          FROM unnest(%s::bigint[], %s::text[], %s::integer[]) AS k(sample_id, topic, "partition")
          JOIN eo.lag_sample_partitions p USING (sample_id, topic, "partition")
         ORDER BY p.sample_id, p.topic, p."partition"
        """,
        ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]),
    )
    found: dict[int, list[SampledPartition]] = {}
    for sample_id, topic, partition, cursor, high, lag in cur.fetchall():
        found.setdefault(sample_id, []).append(SampledPartition(topic, partition, cursor, high, lag))
    return found


def epoch_sample(cur: Any, epoch_id: int) -> tuple[datetime, tuple[SampledPartition, ...]] | None:
    """The commit sample of ``epoch_id`` (its time and every partition), or None."""
    cur.execute(
        "SELECT sample_id, sampled_at FROM eo.lag_samples WHERE epoch_id = %s ORDER BY sample_id LIMIT 1",
        (epoch_id,),
    )
    header = cur.fetchone()
    if header is None:
        return None
    cur.execute(
        'SELECT topic, "partition", cursor_offset, high_watermark, lag FROM eo.lag_sample_partitions'
        ' WHERE sample_id = %s ORDER BY topic, "partition"',
        (header[0],),
    )
    return header[1], tuple(SampledPartition(*row) for row in cur.fetchall())
