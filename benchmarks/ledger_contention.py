"""What the ledger's PostgreSQL saw while the fleet ran (:mod:`benchmarks.pipeline_fleet`).

:class:`WaitSampler` polls ``pg_stat_activity`` from a thread every ``interval_s``: how
many of the ledger database's backends were active, and what each waited on (``Lock`` is
a heavyweight lock wait: a row, a tuple, a transaction id, the same waits ``pg_locks``
shows not granted; ``LWLock`` and ``IO`` are the server's own contention), and the most
connections open on the whole server. :func:`database_counters` reads the database's
``pg_stat_database`` counters (deadlocks among them); :func:`table_sizes` the ledger
tables' rows and bytes.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import psycopg2

ACTIVITY = """
SELECT a.wait_event_type, a.wait_event,
       (SELECT count(*) FROM pg_stat_activity) AS connections
  FROM pg_stat_activity a
 WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.state = 'active'
"""

COUNTERS = ("xact_commit", "xact_rollback", "deadlocks", "conflicts", "blks_read", "blks_hit")

TABLES = ("epochs", "epoch_ranges", "epoch_transitions", "partitions", "pipelines", "cursor_moves")


class WaitSampler:
    """Samples the ledger database's backends until :meth:`stop`; see the module doc."""

    def __init__(self, dsn: str, interval_s: float = 0.01) -> None:
        self._dsn = dsn
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wait-sampler", daemon=True)
        self.samples = 0
        self.active = 0  # sum over samples of the active backends
        self.waits: Counter[str] = Counter()  # "type:event" -> backend-samples spent waiting on it
        self.lock_waiting_samples = 0  # samples in which at least one backend waited on a Lock
        self.max_lock_waiters = 0
        self.max_connections_open = 0

    def __enter__(self) -> WaitSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        conn = psycopg2.connect(self._dsn)
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                while not self._stop.is_set():
                    cur.execute(ACTIVITY)
                    self._count(cur.fetchall())
                    self._stop.wait(self._interval_s)
        finally:
            conn.close()

    def _count(self, rows: list[tuple[Any, ...]]) -> None:
        self.samples += 1
        self.active += len(rows)
        lock_waiters = 0
        for wait_type, event, connections in rows:
            self.max_connections_open = max(self.max_connections_open, int(connections))
            if wait_type is not None:
                self.waits[f"{wait_type}:{event}"] += 1
            lock_waiters += wait_type == "Lock"
        self.lock_waiting_samples += lock_waiters > 0
        self.max_lock_waiters = max(self.max_lock_waiters, lock_waiters)

    def summary(self) -> dict[str, Any]:
        """The figures: samples, mean active backends, lock waits, top wait events (as a
        share of active backend-samples), the most connections open on the server."""
        active = max(self.active, 1)
        lock_samples = sum(n for key, n in self.waits.items() if key.startswith("Lock:"))
        return {
            "samples": self.samples,
            "mean_active_backends": round(self.active / max(self.samples, 1), 2),
            "lock_wait_backend_samples": lock_samples,
            "lock_wait_share": round(lock_samples / active, 4),
            "samples_with_lock_wait": self.lock_waiting_samples,
            "max_simultaneous_lock_waiters": self.max_lock_waiters,
            "wait_events": {key: round(n / active, 4) for key, n in self.waits.most_common(8)},
            "max_connections_open": self.max_connections_open,
        }


def database_counters(dsn: str) -> dict[str, int]:
    """The ledger database's ``pg_stat_database`` counters (:data:`COUNTERS`), fresh
    (the statistics a backend reports at its transactions' ends, flushed within a second)."""
    time.sleep(1.5)
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_stat_force_next_flush()")
            cur.execute("SELECT pg_stat_clear_snapshot()")
            columns = ", ".join(COUNTERS)
            cur.execute(f"SELECT {columns} FROM pg_stat_database WHERE datname = current_database()")
            row = cur.fetchone()
    finally:
        conn.close()
    assert row is not None
    return dict(zip(COUNTERS, (int(v) for v in row), strict=True))


def server_settings(dsn: str) -> dict[str, str]:
    """The server settings that bound many pipelines: connections, lock timeouts, isolation."""
    names = ("max_connections", "deadlock_timeout", "default_transaction_isolation", "shared_buffers")
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name = ANY(%s)", (list(names),)
        )
        settings = dict(cur.fetchall())
    conn.close()
    return settings


def table_sizes(dsn: str) -> dict[str, dict[str, int]]:
    """Rows and total bytes (indexes and TOAST included) of each ledger table."""
    sizes: dict[str, dict[str, int]] = {}
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        for table in TABLES:
            cur.execute("SELECT to_regclass(%s)", (f"eo.{table}",))
            row = cur.fetchone()
            if row is None or row[0] is None:
                continue
            cur.execute(f"SELECT count(*), pg_total_relation_size('eo.{table}') FROM eo.{table}")
            rows, size = cur.fetchone() or (0, 0)
            sizes[table] = {"rows": int(rows), "bytes": int(size)}
    conn.close()
    return sizes
