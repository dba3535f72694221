"""One lazily opened psycopg2 connection with short, explicit transactions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psycopg2

from airflow_provider_eo.ledger.migrate import apply_migrations


class LedgerConnection:
    """Opens the connection on first use (autocommit off), applies pending migrations
    once if ``auto_migrate``, and hands out transactions one at a time (a lock
    serializes threads). A connection broken mid-transaction is dropped; the next
    transaction reconnects."""

    def __init__(self, dsn: str | Callable[[], Any], *, auto_migrate: bool = True) -> None:
        self._connect: Callable[[], Any] = (lambda: psycopg2.connect(dsn)) if isinstance(dsn, str) else dsn
        self._conn: Any = None
        self._migrated = not auto_migrate
        self.lock = threading.RLock()

    def close(self) -> None:
        """Close the connection (the next transaction reopens one)."""
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def raw(self) -> Any:
        """The open psycopg2 connection (opened and migrated if needed); hold ``lock``."""
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
            self._conn.autocommit = False
        if not self._migrated:
            apply_migrations(self._conn)
            self._migrated = True
        return self._conn

    def migrate(self) -> list[int]:
        """Apply pending migrations now; return the versions applied."""
        with self.lock:
            applied = apply_migrations(self.raw())
            self._migrated = True
            return applied

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor in a fresh transaction: committed on success, rolled back on error."""
        with self.lock:
            conn = self.raw()
            try:
                with conn.cursor() as cur:
                    yield cur
                conn.commit()
            except BaseException:
                with suppress(psycopg2.Error):
                    conn.rollback()
                if conn.closed:
                    self._conn = None
                raise
