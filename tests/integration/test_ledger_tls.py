"""The ledger over verify-full TLS with a client certificate, against the stack's PostgreSQL
(``ssl=on``, ``hostssl ... cert`` for role ``eo_tls``, whose sessions act as ``eo``): a
reservation round trip through ``EoLedgerHook`` and ``pg_stat_ssl``; and the negative
controls (a CA that did not sign the server, an expired client certificate, one signed by a
foreign CA, none), each refused with ``LedgerUnavailable`` naming the connection id and the
cause, the ledger's rows unchanged.

Kafka's offsets come from an in-memory source: the TLS under test is the ledger's."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import psycopg2
import pytest
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.refusals import LedgerUnavailable
from eo_devtools.ledger_direct import reserve_stream_epoch
from eo_devtools.stack.connections import ledger_tls_connection
from eo_devtools.stack.pki import (
    ClientCert,
    expired_client_cert,
    foreign_client_cert,
    stack_client_cert,
    stack_pki,
)
from eo_devtools.stack.postgres import TLS_ROLE
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, make_spec

pytestmark = pytest.mark.integration

CONN_ID = "eo_ledger_tls_test"
TP = tuple[str, int]


class _Offsets:
    """Topic ``t``, partition 0 with 5 records; no group offsets."""

    def list_partitions(self, topics: Sequence[str], pattern: str | None) -> list[TP]:
        return [("t", 0)]

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        return {tp: (0, 5) for tp in tps}

    def offsets_for_timestamp(self, tps: Iterable[TP], ts_ms: int) -> dict[TP, int]:
        raise NotImplementedError

    def committed_offsets(self, group_id: str, tps: Iterable[TP]) -> dict[TP, int | None]:
        return {tp: None for tp in tps}


@pytest.fixture(scope="module")
def database(stack: StackInfo) -> Iterator[str]:
    """A scratch database (its password DSN), the ledger's schema migrated into it."""
    with fresh_database(stack.ledger_dsn) as dsn:
        with Ledger(dsn) as ledger:
            ledger.migrate()
        yield dsn


def _hook(
    monkeypatch: pytest.MonkeyPatch,
    stack: StackInfo,
    dsn: str,
    client: ClientCert | None,
    ca: Path | None = None,
) -> EoLedgerHook:
    params = parse_dsn(dsn)
    pki = stack_pki(stack.state_dir)
    conn = json.loads(
        ledger_tls_connection(
            int(params["port"]),
            TLS_ROLE,
            params["dbname"],
            ca or pki.ca,
            Path("/nonexistent"),
            Path("/nonexistent"),
        )
    )
    if client is None:
        del conn["extra"]["sslcert"], conn["extra"]["sslkey"]
    else:
        conn["extra"]["sslcert"], conn["extra"]["sslkey"] = str(client.cert), str(client.key)
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(conn))
    return EoLedgerHook(CONN_ID)


def _epochs(dsn: str) -> list[tuple[int, str, str]]:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT epoch_id, pipeline, state FROM eo.epochs ORDER BY epoch_id")
        rows = cur.fetchall()
    conn.close()
    return rows


def test_a_reservation_over_verify_full_tls_with_a_client_certificate(
    stack: StackInfo, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = stack_client_cert(stack.state_dir, TLS_ROLE)
    spec = make_spec()
    before = _epochs(database)
    with _hook(monkeypatch, stack, database, client).get_ledger() as ledger:
        epoch = reserve_stream_epoch(ledger, spec, _Offsets(), dag_id="d", run_id="r1")
        assert epoch is not None
        assert [(r.topic, r.partition, r.start, r.end) for r in epoch.ranges] == [("t", 0, 0, 5)]
        with ledger.transaction() as cur:
            cur.execute("SELECT ssl, version, client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            ssl, version, client_dn = cur.fetchone()
            cur.execute("SELECT session_user, current_user")
            assert cur.fetchone() == (TLS_ROLE, "eo")
    assert (ssl, client_dn) == (True, f"/CN={TLS_ROLE}")
    assert version.startswith("TLSv1.")
    assert _epochs(database) == [*before, (epoch.epoch_id, spec.name, "RESERVED")]


def _refused(hook: EoLedgerHook, database: str, cause: str) -> None:
    before = _epochs(database)
    with pytest.raises(LedgerUnavailable) as raised, hook.get_ledger() as ledger:
        reserve_stream_epoch(ledger, make_spec(), _Offsets(), dag_id="d", run_id="r-refused")
    message = str(raised.value)
    assert f"of connection {CONN_ID!r} (nothing was changed): " in message
    assert cause in message
    assert _epochs(database) == before


def test_a_ca_that_did_not_sign_the_server_is_refused(
    stack: StackInfo, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pki = stack_pki(stack.state_dir)
    client = stack_client_cert(stack.state_dir, TLS_ROLE)
    _refused(
        _hook(monkeypatch, stack, database, client, ca=pki.other_ca), database, "certificate verify failed"
    )


def test_an_expired_client_certificate_is_refused(
    stack: StackInfo, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = expired_client_cert(stack_pki(stack.state_dir), TLS_ROLE)
    _refused(_hook(monkeypatch, stack, database, client), database, "certificate expired")


def test_a_client_certificate_of_a_foreign_ca_is_refused(
    stack: StackInfo, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = foreign_client_cert(stack_pki(stack.state_dir), TLS_ROLE)
    _refused(_hook(monkeypatch, stack, database, client), database, "unknown ca")


def test_no_client_certificate_is_refused(
    stack: StackInfo, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refused(
        _hook(monkeypatch, stack, database, None), database, "connection requires a valid client certificate"
    )
