"""Ledger hook: the epoch ledger on a PostgreSQL connection."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eo.clients.connection_settings import postgres_dsn
from airflow_provider_eo.clients.connections import DEFAULT_LEDGER_CONN_ID
from airflow_provider_eo.hooks.base import EoHook

if TYPE_CHECKING:
    from airflow_provider_eo.ledger import Ledger


class EoLedgerHook(EoHook):
    """Gives a :class:`~airflow_provider_eo.ledger.Ledger` for a Postgres connection.

    host, port, login, password, schema (= database name); libpq keywords such as
    ``sslmode`` in ``extra``. The DSN is built in memory and never logged. Any
    conn_type (``postgres``, ``eo_ledger`` ...) is accepted for the connection id.

    :param ledger_conn_id: connection id (default ``eo_ledger``).
    """

    conn_name_attr = "ledger_conn_id"
    default_conn_name = DEFAULT_LEDGER_CONN_ID
    conn_type = "eo_ledger"
    hook_name = "EO Epoch Ledger (PostgreSQL)"

    def __init__(self, ledger_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.ledger_conn_id = ledger_conn_id

    def _dsn(self) -> str:
        return postgres_dsn(self.eo_connection(self.ledger_conn_id))

    def get_ledger(self) -> Ledger:
        """A Ledger on this connection (the Ledger applies pending migrations on first use)."""
        from airflow_provider_eo.ledger import Ledger

        return Ledger(self._dsn(), conn_id=self.ledger_conn_id)

    def test_connection(self) -> tuple[bool, str]:
        """(True, server version and migration state) when PostgreSQL answers, else (False, error)."""
        import psycopg2

        try:
            with psycopg2.connect(self._dsn()) as conn, conn.cursor() as cur:
                cur.execute("SELECT current_setting('server_version'), to_regclass('eo.epochs') IS NOT NULL")
                row = cur.fetchone()
            conn.close()
        except Exception as exc:
            # psycopg2 messages name host/port/user but never the password.
            return False, f"Ledger connection {self.ledger_conn_id!r} failed: {exc}"
        version, migrated = row if row else ("?", False)
        state = "ledger schema present" if migrated else "ledger schema not created yet (done on first use)"
        return True, f"Connected to PostgreSQL {version}; {state}"
