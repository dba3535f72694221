"""The store raises ``LedgerUnavailable`` wherever its connection breaks, outside
transactions too (the migration versions, explicit migrations), so no caller (the UI
plugin, the CLI) needs to know psycopg2's exceptions. Real PostgreSQL: the server ends
the ledger's session (``pg_terminate_backend``), as a restart or a network cut would."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg2
import pytest

from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.refusals import LedgerUnavailable
from airflow_provider_eo.ledger.store.migrate import available_migrations
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database

pytestmark = pytest.mark.integration


@pytest.fixture
def ledger_dsn(stack: StackInfo) -> Iterator[str]:
    with fresh_database(stack.ledger_dsn) as dsn:
        yield dsn


def _end_sessions_of(ledger: Ledger, dsn: str) -> None:
    """End the ledger's open session from another connection of the server."""
    with ledger.transaction() as cur:
        cur.execute("SELECT pg_backend_pid()")
        (pid,) = cur.fetchone()
    with psycopg2.connect(dsn) as admin, admin.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert cur.fetchone() == (True,)
    admin.close()


@pytest.mark.parametrize("call", ["schema_versions", "migrate"])
def test_a_broken_session_outside_transactions_is_ledger_unavailable(ledger_dsn: str, call: str) -> None:
    every = [m.version for m in available_migrations()]
    with Ledger(ledger_dsn, conn_id="eo_ledger") as ledger:
        _end_sessions_of(ledger, ledger_dsn)
        with pytest.raises(LedgerUnavailable) as raised:
            getattr(ledger, call)()
        server = ledger_dsn_server(ledger_dsn)
        assert str(raised.value).startswith(
            f"epoch ledger unavailable at {server} of connection 'eo_ledger' (nothing was changed): "
        )
        assert raised.value.outcome_unknown is False
        assert isinstance(raised.value.__cause__, psycopg2.OperationalError | psycopg2.InterfaceError)
        assert ledger.schema_versions() == every  # the next call opens a new connection


def ledger_dsn_server(dsn: str) -> str:
    """``host:port/dbname`` of a DSN, as the ledger names its server."""
    params = psycopg2.extensions.parse_dsn(dsn)
    return f"{params['host']}:{params['port']}/{params['dbname']}"
