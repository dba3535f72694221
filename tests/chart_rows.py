"""What the Epochs page's charts must show, read directly from the ledger's tables (the
oracle of tests/integration/test_epoch_charts.py and the browser walkthrough).

:func:`raw_epochs` and :func:`raw_samples` give the charts' JSON (``GET
/api/pipelines/{name}/charts``) from the rows, with the phase arithmetic of docs/ui.md
written out again; :func:`expected_points` the ``data-*`` attributes of every point the
page draws from them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg2

PHASE_ORDER = ("reserve", "wait_for_spark", "spark_tasks", "wait_for_commit", "commit")


def raw_epochs(dsn: str, pipeline: str) -> list[dict[str, Any]]:
    """The pipeline's COMMITTED epochs as the charts must show them, computed from the rows
    (the phase arithmetic of docs/ui.md, "Where an epoch's time goes")."""
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            """
            SELECT e.epoch_id, e.kind, e.created_at, e.written_at, e.committed_at, e.commit_started_at,
                   e.metrics,
                   (SELECT at FROM eo.epoch_transitions t WHERE t.epoch_id = e.epoch_id AND from_state IS NULL
                      AND actor_kind <> 'migration')
              FROM eo.epochs e WHERE pipeline = %s AND state = 'COMMITTED' ORDER BY epoch_id
            """,
            (pipeline,),
        )
        rows = cur.fetchall()
    conn.close()
    found = []
    for epoch_id, kind, created, written, committed, commit_started, metrics, reserved in rows:
        spark, after = metrics.get("spark_tasks_s"), metrics.get("vote_after_tasks_s")
        ended = written - timedelta(seconds=after) if after is not None else None
        started = ended - timedelta(seconds=spark) if ended is not None and spark is not None else None

        def span(a: Any, b: Any) -> float | None:
            return None if a is None or b is None else round((b - a).total_seconds(), 3)

        phases = {
            "reserve": span(created, reserved), "wait_for_spark": span(reserved, started),
            "spark_tasks": span(started, ended), "wait_for_commit": span(ended, commit_started),
            "commit": span(commit_started, committed),
        }  # fmt: skip
        rate = round(metrics["records"] / spark, 1) if spark else None
        found.append({
            "epoch_id": epoch_id, "kind": kind, "committed_at": committed.isoformat(),
            "records": metrics["records"], "records_per_s": rate, "dead_letters": metrics.get("bad_records"),
            "duration_s": span(created, committed), "phases": phases,
        })  # fmt: skip
    return found


def raw_samples(dsn: str, pipeline: str) -> list[dict[str, Any]]:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT sample_id, sampled_at, source, epoch_id, total_lag FROM eo.lag_samples"
            " WHERE pipeline = %s ORDER BY sampled_at, sample_id",
            (pipeline,),
        )
        found = []
        for sample_id, at, source, epoch_id, total in cur.fetchall():
            cur.execute(
                'SELECT topic, "partition", cursor_offset, high_watermark, lag FROM eo.lag_sample_partitions'
                ' WHERE sample_id = %s ORDER BY topic, "partition"',
                (sample_id,),
            )
            keys = ("topic", "partition", "cursor", "high_watermark", "lag")
            partitions = [dict(zip(keys, row, strict=True)) for row in cur.fetchall()]
            found.append({"sample_id": sample_id, "at": at.isoformat(), "source": source,
                          "epoch_id": epoch_id, "total_lag": total, "partitions": partitions})  # fmt: skip
    conn.close()
    return found


def sample_rows(
    dsn: str, pipeline: str
) -> list[tuple[str, int | None, int, list[tuple[str, int, int, int, int]]]]:
    """:func:`raw_samples` as ``(source, epoch_id, total_lag, [(topic, partition, cursor,
    high_watermark, lag)])``, oldest first."""
    return [
        (s["source"], s["epoch_id"], s["total_lag"],
         [(p["topic"], p["partition"], p["cursor"], p["high_watermark"], p["lag"]) for p in s["partitions"]])
        for s in raw_samples(dsn, pipeline)
    ]  # fmt: skip


def _shown(value: Any) -> str:
    return "unknown" if value is None else str(value)


def expected_points(epochs: list[dict[str, Any]], samples: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The ``data-*`` attributes (without the prefix) of every point the charts draw for
    ``epochs`` and ``samples`` (:func:`raw_epochs`, :func:`raw_samples`), sorted."""
    points: list[dict[str, str]] = []
    for e in epochs:
        base = {"epoch-id": str(e["epoch_id"]), "time": e["committed_at"]}
        rate = e["records_per_s"]
        points += [
            {"chart": "records", **base, "value": str(e["records"])},
            {"chart": "rate", **base, "value": _shown(rate)},
            {"chart": "dead-letters", **base, "value": _shown(e["dead_letters"])},
        ]
        known = {p: v for p, v in e["phases"].items() if v is not None}
        stack = [(p, known[p]) for p in PHASE_ORDER if p in known]
        if len(known) < len(PHASE_ORDER):
            stack.append(("unknown", round(e["duration_s"] - sum(known.values()), 3)))
        points += [{"chart": "phases", **base, "phase": p, "value": str(v)} for p, v in stack]
    for s in samples:
        head = {"chart": "lag", "sample-id": str(s["sample_id"]), "time": s["at"], "source": s["source"]}
        if s["epoch_id"] is not None:
            head["epoch-id"] = str(s["epoch_id"])
        points.append({**head, "series": "total", "value": str(s["total_lag"])})
        points += [
            {**head, "series": f"{r['topic']}[{r['partition']}]", "topic": r["topic"],
             "partition": str(r["partition"]), "cursor": str(r["cursor"]),
             "high-watermark": str(r["high_watermark"]), "value": str(r["lag"])}
            for r in s["partitions"]
        ]  # fmt: skip
    return sorted(points, key=lambda p: sorted(p.items()))
