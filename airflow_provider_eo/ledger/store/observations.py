"""What the ledger observes beside the state machine, in PostgreSQL: dead letters (a Spark
task's bad records) and lag samples. Each call is one short transaction; nothing here
changes an epoch, and a failure here leaves every epoch as it was.

:class:`PostgresDeadLetters` is all a Spark executor gets (``spark/task/bad_records.py``):
it stores dead letters and can do nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_eo.ledger.model.epoch import DeadLetter
from airflow_provider_eo.ledger.model.lag import LagSample
from airflow_provider_eo.ledger.store import dead_letter_rows, lag_sample_rows
from airflow_provider_eo.ledger.store.connection import LedgerConnection, OnLedgerConnection


class PostgresDeadLetters(OnLedgerConnection):
    """``DeadLetterRecords`` (``ledger/model/ledger_roles.py``) over one connection."""

    @classmethod
    def connect(cls, dsn: str, *, conn_id: str | None = None) -> PostgresDeadLetters:
        """Dead-letter records of the ledger at ``dsn`` (a libpq DSN/URI), connected on first
        use and never migrating the schema (whoever reserved the epoch already did).
        ``conn_id`` is named in connection errors (``LedgerUnavailable``)."""
        return cls(LedgerConnection(dsn, auto_migrate=False, conn_id=conn_id))

    def record_dead_letters(self, rows: Iterable[DeadLetter | Mapping[str, Any]]) -> int:
        """Idempotently store dead letters (a replay overwrites the same offsets; a newer
        epoch's row is kept); how many rows were written."""
        with self._db.transaction() as cur:
            return dead_letter_rows.upsert_dead_letters(cur, rows)


class PostgresObservations(PostgresDeadLetters):
    """``LedgerObservations`` (``ledger/model/ledger_roles.py``): dead letters and lag samples."""

    def record_lag_sample(self, sample: LagSample) -> int:
        """Store ``sample`` (``ledger/model/lag.py``); returns its id."""
        with self._db.transaction() as cur:
            return lag_sample_rows.insert_lag_sample(cur, sample)
