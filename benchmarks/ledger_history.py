"""A ledger with a long history, for the reserve + commit benchmark (:mod:`.reserve_commit`).

:func:`insert_history` bulk-inserts COMMITTED stream epochs with SQL; :func:`inspect`
times the cursor query stored cursors replaced on that history and says which index
answers each query of the reserve/commit path (EXPLAIN).
"""

from __future__ import annotations

import time

import psycopg2

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.store.transaction_labels import label_actor

# The cursor query before migration 0002: every committed stream range of the partition.
LEGACY_CURSORS = """
SELECT p.topic, p."partition",
       GREATEST(p.initial_offset,
                (SELECT max(r.end_offset) FROM eo.epoch_ranges r JOIN eo.epochs e USING (epoch_id)
                  WHERE e.pipeline = p.pipeline AND e.kind = 'stream' AND e.state = 'COMMITTED'
                    AND r.topic = p.topic AND r."partition" = p."partition"),
                (SELECT max(g.end_offset) FROM eo.gaps g
                  WHERE g.pipeline = p.pipeline AND g.topic = p.topic AND g."partition" = p."partition"))
  FROM eo.partitions p WHERE p.pipeline = %(pipeline)s
"""

# The reserve/commit path's queries whose cost could grow with history, as the store runs them.
PATH_QUERIES = {
    "cursors": 'SELECT topic, "partition", cursor_offset FROM eo.partitions WHERE pipeline = %(pipeline)s',
    "open_stream_epoch": "SELECT epoch_id FROM eo.epochs WHERE pipeline = %(pipeline)s"
    " AND state = ANY(ARRAY['RESERVED', 'WRITTEN']) AND kind = 'stream'",
    "run_own_epochs": "SELECT epoch_id FROM eo.epochs WHERE pipeline = %(pipeline)s AND kind = 'backfill'"
    " AND state = ANY(ARRAY['RESERVED', 'WRITTEN', 'COMMITTED']) AND dag_id = 'b' AND run_id = 'r'",
    "epoch_ranges": 'SELECT topic, "partition" FROM eo.epoch_ranges WHERE epoch_id = ANY(ARRAY[%(epoch)s])',
    "advance_cursors": "UPDATE eo.partitions p SET cursor_offset = r.end_offset"
    " FROM eo.epochs e JOIN eo.epoch_ranges r USING (epoch_id)"
    " WHERE e.epoch_id = %(epoch)s AND e.kind = 'stream' AND e.state = 'COMMITTED'"
    ' AND p.pipeline = e.pipeline AND p.topic = r.topic AND p."partition" = r."partition"'
    " AND p.cursor_offset < r.end_offset",
}


def insert_history(dsn: str, pipeline: str, epochs: int) -> float:
    """Bulk-insert ``epochs`` COMMITTED stream epochs of ``pipeline``, each with a range
    ``[0, 1)`` on every pinned partition (below every cursor); returns the ms it took."""
    started = time.perf_counter()
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        label_actor(cur, Actor("process", "benchmarks/ledger_history.py"))  # the history trigger's actor
        cur.execute(
            """
            WITH new AS (
                INSERT INTO eo.epochs (pipeline, kind, state, fencing_token, dag_id, run_id,
                                       created_at, written_at, committed_at)
                SELECT %(pipeline)s, 'stream', 'COMMITTED', gen_random_uuid(), 'history', 'h-' || i,
                       now(), now(), now()
                  FROM generate_series(1, %(epochs)s) AS i
                RETURNING epoch_id
            )
            INSERT INTO eo.epoch_ranges (epoch_id, topic, "partition", start_offset, end_offset)
            SELECT new.epoch_id, p.topic, p."partition", 0, 1
              FROM new CROSS JOIN eo.partitions p WHERE p.pipeline = %(pipeline)s
            """,
            {"pipeline": pipeline, "epochs": epochs},
        )
    conn.close()
    maintenance = psycopg2.connect(dsn)
    maintenance.autocommit = True  # VACUUM runs outside a transaction
    try:
        with maintenance.cursor() as cur:
            cur.execute("VACUUM ANALYZE eo.epochs")
            cur.execute("VACUUM ANALYZE eo.epoch_ranges")
    finally:
        maintenance.close()
    return (time.perf_counter() - started) * 1000


def inspect(dsn: str, pipeline: str) -> tuple[float, dict[str, str]]:
    """The legacy cursor query's ms on the history, and the plan of each path query."""
    plans: dict[str, str] = {}
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT max(epoch_id) FROM eo.epochs WHERE pipeline = %s", (pipeline,))
        row = cur.fetchone()
        params = {"pipeline": pipeline, "epoch": row[0] if row else None}
        started = time.perf_counter()
        cur.execute(LEGACY_CURSORS, params)
        cur.fetchall()
        legacy_ms = (time.perf_counter() - started) * 1000
        for name, query in PATH_QUERIES.items():
            cur.execute("EXPLAIN " + query, params)
            plans[name] = " / ".join(line.strip() for (line,) in cur.fetchall() if "Scan" in line)
        conn.rollback()
    conn.close()
    return legacy_ms, plans
