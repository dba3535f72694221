"""One lazily opened psycopg2 connection with short, explicit transactions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psycopg2
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.refusals import LedgerUnavailable
from airflow_provider_eo.ledger.store.migrate import apply_migrations
from airflow_provider_eo.ledger.store.transaction_labels import label_actor

# Errors of the connection itself (server gone, restarted, unreachable), not of a statement.
CONNECTION_ERRORS = (psycopg2.OperationalError, psycopg2.InterfaceError)


class LedgerConnection:
    """Opens the connection on first use (autocommit off), applies pending migrations
    once if ``auto_migrate``, and hands out transactions one at a time (a lock
    serializes threads). A connection broken mid-transaction is dropped; the next
    transaction reconnects. Connection failures raise :class:`LedgerUnavailable` naming
    the server (never the password).

    Every transaction runs labelled with :attr:`actor` (store/transaction_labels.py), the author the
    history triggers record for its changes: named for the session when the connection
    opens or the actor changes, and again after a rollback (which undoes the naming)."""

    def __init__(
        self,
        dsn: str | Callable[[], Any],
        *,
        auto_migrate: bool = True,
        conn_id: str | None = None,
        actor: Actor | None = None,
    ) -> None:
        self.actor = actor or Actor.process()
        self._session_actor: Actor | None = None  # the actor the open connection's session names
        self._connect: Callable[[], Any] = (lambda: psycopg2.connect(dsn)) if isinstance(dsn, str) else dsn
        self._conn: Any = None
        self._migrated = not auto_migrate
        self._conn_id = conn_id
        self._where = self._describe(_server_of(dsn) if isinstance(dsn, str) else "the ledger connection")
        self.lock = threading.RLock()

    def _describe(self, server: str) -> str:
        """Where the ledger is, for messages: the server and, if known, the Airflow conn id."""
        return f"{server} of connection {self._conn_id!r}" if self._conn_id else server

    def close(self) -> None:
        """Close the connection (the next transaction reopens one)."""
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def raw(self) -> Any:
        """The open psycopg2 connection (opened and migrated if needed); hold ``lock``.

        Raises :class:`LedgerUnavailable` when the server cannot be reached or the
        connection breaks while migrating (the migration is then rolled back)."""
        if self._conn is None or self._conn.closed:
            try:
                self._session_actor = None
                self._conn = self._connect()
            except CONNECTION_ERRORS as exc:
                raise LedgerUnavailable(self._where, _first_line(exc)) from exc
            self._conn.autocommit = False
            dsn = getattr(self._conn, "dsn", None)
            if isinstance(dsn, str):
                self._where = self._describe(_server_of(dsn))
        if not self._migrated:
            with self._breaks_reported():
                apply_migrations(self._conn)
            self._migrated = True
        return self._conn

    @contextmanager
    def connected(self) -> Iterator[Any]:
        """The open connection under ``lock``, for work outside :meth:`transaction`
        (migrations and their versions), which must end its own transaction.

        Raises :class:`LedgerUnavailable` when the server cannot be reached or the
        connection breaks inside the block (a broken connection is dropped)."""
        with self.lock, self._breaks_reported():
            yield self.raw()

    @contextmanager
    def _breaks_reported(self) -> Iterator[None]:
        """Turn a connection error inside the block into :class:`LedgerUnavailable`
        (nothing changed); drop the connection if it closed."""
        try:
            yield
        except CONNECTION_ERRORS as exc:
            if self._conn is not None and self._conn.closed:
                self._conn = None
            raise LedgerUnavailable(self._where, _first_line(exc)) from exc

    def migrate(self) -> list[int]:
        """Apply pending migrations now; return the versions applied.

        Raises :class:`LedgerUnavailable` when the server cannot be reached or the
        connection breaks (nothing applied)."""
        with self.connected() as conn:
            applied = apply_migrations(conn)
            self._migrated = True
            return applied

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor in a fresh transaction: committed on success, rolled back on error.

        Raises :class:`LedgerUnavailable` when the server cannot be reached or the
        connection breaks (``outcome_unknown`` when it broke during the commit itself).
        """
        with self.lock:
            conn = self.raw()
            committing = False
            try:
                with conn.cursor() as cur:
                    if self._session_actor != self.actor:
                        label_actor(cur, self.actor, session=True)
                        self._session_actor = self.actor
                    yield cur
                committing = True
                conn.commit()
            except BaseException as exc:
                self._session_actor = None
                with suppress(psycopg2.Error):
                    conn.rollback()
                if conn.closed:
                    self._conn = None
                if isinstance(exc, CONNECTION_ERRORS):
                    detail = _first_line(exc)
                    raise LedgerUnavailable(self._where, detail, outcome_unknown=committing) from exc
                raise


def _server_of(dsn: str) -> str:
    """``host:port/dbname`` of a libpq DSN or URI (no user, no password)."""
    try:
        params = parse_dsn(dsn)
    except psycopg2.ProgrammingError:
        return "the ledger connection"
    return f"{params.get('host', 'localhost')}:{params.get('port', '5432')}/{params.get('dbname', '')}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class OnLedgerConnection:
    """A role of the ledger (``ledger/model/ledger_roles.py``) played over ``db``; the
    roles one :class:`~.postgres_ledger.Ledger` plays share its one connection."""

    def __init__(self, db: LedgerConnection) -> None:
        self._db = db

    def close(self) -> None:
        """Close the connection (the next call reopens one)."""
        self._db.close()
