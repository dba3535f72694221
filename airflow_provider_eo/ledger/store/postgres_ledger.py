"""``Ledger``: the PostgreSQL epoch ledger, every role in one object; and the one role a
Spark executor gets, :class:`PostgresDeadLetters`. Outside ``ledger/``, the store is
reached through this module only (tests/unit/test_layers.py).

A ``Ledger`` plays every role of ``ledger/model/ledger_roles.py`` over one connection:

* the protocol's store (``protocol_store.py``): guarded transitions, the script
  transaction, who acts;
* the read model of the CLI and the UI (``read_store.py``);
* administration: migrations and retention (``administration.py``);
* observations: lag samples and dead letters (``observations.py``);
* the kept audits (``audit_store.py``).

Callers name the role they need (``ProtocolStore``, ``LedgerReads``, ...), not this class.

Every public method runs in its own short transaction (commit on success, rollback on
error) on one psycopg2 connection per instance, opened lazily; a broken connection is
dropped and reopened by the next call. Pending migrations are applied on first use.
An instance is safe to share between threads (calls are serialized by a lock), but
one instance per thread or process is the intended use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.store.administration import PostgresAdministration
from airflow_provider_eo.ledger.store.audit_store import PostgresAudits
from airflow_provider_eo.ledger.store.connection import LedgerConnection
from airflow_provider_eo.ledger.store.observations import PostgresDeadLetters
from airflow_provider_eo.ledger.store.protocol_store import PostgresProtocolStore
from airflow_provider_eo.ledger.store.read_store import PostgresReads

__all__ = ["Ledger", "PostgresDeadLetters"]


class Ledger(PostgresProtocolStore, PostgresReads, PostgresAdministration, PostgresAudits):
    """The epoch ledger at ``dsn`` (a libpq DSN/URI) or from a connection factory;
    ``conn_id`` (the Airflow connection it came from) is named in connection errors.
    ``actor`` is recorded as the author of every change (default: :meth:`Actor.process`).
    A context manager: leaving the block closes the connection."""

    def __init__(
        self,
        dsn: str | Callable[[], Any],
        *,
        auto_migrate: bool = True,
        conn_id: str | None = None,
        actor: Actor | None = None,
    ) -> None:
        super().__init__(LedgerConnection(dsn, auto_migrate=auto_migrate, conn_id=conn_id, actor=actor))

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
