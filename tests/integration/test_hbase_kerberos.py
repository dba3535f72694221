"""HBase secured with Kerberos, through the provider's Thrift client: the stack's Kerberized HBase
(``eo-stack up --kerberos``, devtools/eo_devtools/stack/hbase_kerberos.py) and its Thrift server
at ``hbase.thrift.security.qop=auth-conf``.

Asserts: ``eo_hbase_kerberos`` writes and reads exact cells over SASL/GSSAPI with ``auth-conf``
negotiated, and HBase runs each call as ``eo-writer`` through Kerberos RPC; a wrong principal,
another principal's keytab, an expired ticket and a ``qop`` the server refuses each fail ``open``
with :class:`HBaseAuthError` naming the connection, the server and the cause, no secret, and
leave the table as it was; a client whose tickets outlive their lifetime (a principal whose
tickets last 8 s) keeps writing: its open connection stays valid and a new one gets fresh
tickets from the keytab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs
from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.clients.hbase_thrift import EoThriftConnection, HBaseAuthError, hbase_connection
from airflow_provider_eo.hooks.hbase import EoHBaseHook
from eo_devtools.stack.kdc import Kdc
from tests.kerberos_login import logout, restored_login

pytestmark = pytest.mark.integration

CONN_ID = "eo_hbase_kerberos"
#: How long the short-lived principal's tickets last (the KDC caps them at this).
SHORT_LIFE_S = 8


@pytest.fixture(scope="module")
def kerberos_conn(kerberos_stack: dict[str, str]) -> dict[str, Any]:
    """``eo_hbase_kerberos`` as the stack gives it (host, port, extra)."""
    return dict(json.loads(kerberos_stack["AIRFLOW_CONN_EO_HBASE_KERBEROS"]))


def _logout() -> None:
    """Forget this process's Kerberos login (the client allows one identity per process)."""
    logout()


@pytest.fixture(autouse=True)
def fresh_login() -> Iterator[None]:
    """Each test logs in afresh; the process's Kerberos variables are as before afterwards."""
    with restored_login():
        yield


@pytest.fixture
def kdc(stack: Any, kerberos_stack: dict[str, str]) -> Kdc:
    return Kdc(stack.state_dir)


def _connection(conn: dict[str, Any], **extra: Any) -> EoThriftConnection:
    merged = {**conn["extra"], "timeout_ms": "10000", **extra}
    settings = {key: value for key, value in merged.items() if value is not None}
    kwargs = hbase_connection_kwargs(
        EoConnection(CONN_ID, host=conn["host"], port=conn["port"], extra=settings)
    )
    connection = hbase_connection({**kwargs, "autoconnect": False}, conn_id=CONN_ID)
    assert isinstance(connection, EoThriftConnection)
    return connection


def _where(conn: dict[str, Any], principal: str, qop: str = "auth-conf") -> str:
    return (
        f"HBase connection '{CONN_ID}': Thrift server {conn['host']}:{conn['port']} "
        f"(SASL/GSSAPI as {principal} to hbase/localhost, qop {qop}): cannot open: "
    )


@pytest.fixture
def table(kerberos_conn: dict[str, Any]) -> Iterator[str]:
    """A fresh table ``d`` (3 versions), created and dropped over the Kerberized connection."""
    name = f"krb_{uuid.uuid4().hex[:8]}"
    connection = _connection(kerberos_conn)
    connection.open()
    connection.create_table(name, {"d": {"max_versions": 3}})
    connection.close()
    yield name
    _logout()
    connection = _connection(kerberos_conn)
    connection.open()
    connection.delete_table(name, disable=True)
    connection.close()


def _cells(conn: dict[str, Any], table: str) -> dict[bytes, list[tuple[bytes, int]]]:
    """Every version of every cell of ``table``: ``row:column`` -> [(value, timestamp)], newest first."""
    _logout()
    connection = _connection(conn)
    connection.open()
    try:
        handle = connection.table(table)
        result = {}
        for row, columns in handle.scan(include_timestamp=True):
            for column in columns:
                key = row + b"|" + column
                result[key] = handle.cells(row, column, versions=3, include_timestamp=True)
        return result
    finally:
        connection.close()


def test_exact_cells_over_sasl_auth_conf(
    stack: Any, kerberos_stack: dict[str, str], kerberos_conn: dict[str, Any], table: str, monkeypatch: Any
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_EO_HBASE_KERBEROS", kerberos_stack["AIRFLOW_CONN_EO_HBASE_KERBEROS"])
    connection = EoHBaseHook(CONN_ID).get_conn()
    try:
        assert isinstance(connection, EoThriftConnection)
        assert connection.sasl_client is not None and connection.sasl_client.qop == "auth-conf"
        handle = connection.table(table)
        handle.put(b"r1", {b"d:a": b"\x00one"}, timestamp=10)
        handle.put(b"r1", {b"d:a": b"two"}, timestamp=20)
        handle.put(b"r2", {b"d:b": b"x" * 70_000}, timestamp=30)
    finally:
        connection.close()
    assert _cells(kerberos_conn, table) == {
        b"r1|d:a": [(b"two", 20), (b"\x00one", 10)],
        b"r2|d:b": [(b"x" * 70_000, 30)],
    }
    log = (stack.state_dir / "logs" / "hbase-kerberos.log").read_text()
    assert (
        "ugi=eo-writer (auth:PROXY) via hbase/localhost@EO.TEST (auth:KERBEROS), service=ClientService" in log
    )


def _refused(conn: dict[str, Any], table: str, **extra: Any) -> str:
    """Open a connection with ``extra`` and put a cell; return the :class:`HBaseAuthError`."""
    _logout()  # a login of its own, whatever this process used before
    connection = _connection(conn, **extra)
    with pytest.raises(HBaseAuthError) as caught:
        connection.open()
        connection.table(table).put(b"refused", {b"d:a": b"no"}, timestamp=1)
    _logout()
    return str(caught.value)


def test_negative_logins_change_nothing(
    kdc: Kdc, kerberos_conn: dict[str, Any], table: str, tmp_path: Path
) -> None:
    writer = "eo-writer@EO.TEST"
    no_credentials = (
        "('No credentials were supplied, or the credentials were unavailable or inaccessible', 458752)"
    )
    writer_keytab, other = kdc.keytab("eo-writer"), kdc.keytab("eo-other")
    wrong_principal = _refused(kerberos_conn, table, kerberos_principal="eo-nobody@EO.TEST")
    assert wrong_principal == _where(kerberos_conn, "eo-nobody@EO.TEST") + (
        f'({no_credentials}, ("Can\'t find client principal eo-nobody@EO.TEST in cache collection", '
        f"-1765328243)) (the keytab {writer_keytab} holds no key of eo-nobody@EO.TEST)"
    )
    other_keytab = _refused(kerberos_conn, table, kerberos_keytab=str(other))
    assert other_keytab == _where(kerberos_conn, writer) + (
        f'({no_credentials}, ("Can\'t find client principal eo-writer@EO.TEST in cache collection", '
        f"-1765328243)) (the keytab {other} holds no key of eo-writer@EO.TEST)"
    )
    qop = _refused(kerberos_conn, table, sasl_qop="auth")
    offered, supported = qop.split(", and GSSAPI supports ")  # pure-sasl lists a set: any order
    assert offered == _where(kerberos_conn, writer, "auth") + (
        "Bad SASL result: Your requested quality of protection is one of (auth), the server is "
        "offering (auth-conf)"
    )
    assert sorted(supported.strip("()").split(", ")) == ["auth", "auth-conf", "auth-int"]

    secrets = [kdc.keytab(name).read_bytes() for name in ("eo-writer", "eo-other", "hbase")]
    for message in (wrong_principal, other_keytab, qop):
        assert not any(secret in message.encode() for secret in secrets)
    assert _cells(kerberos_conn, table) == {}


def _kinit(kdc: Kdc, principal: str, keytab: Path, ccache: Path) -> None:
    subprocess.run(
        ["kinit", "-k", "-t", str(keytab), "-c", f"FILE:{ccache}", principal], env=kdc.env(), check=True
    )


def _tgt_start(kdc: Kdc, ccache: str) -> str:
    """The ``Valid starting`` column of the ticket cache's TGT."""
    listing = subprocess.run(
        ["klist", "-c", ccache], env=kdc.env(), capture_output=True, text=True, check=True
    )
    tgt = [line for line in listing.stdout.splitlines() if line.endswith("krbtgt/EO.TEST@EO.TEST")]
    return " ".join(tgt[-1].split()[:2])


def test_tickets_outliving_their_lifetime(
    kdc: Kdc, kerberos_conn: dict[str, Any], table: str, tmp_path: Path
) -> None:
    name = f"eo-short-{uuid.uuid4().hex[:6]}"
    keytab = kdc.add_principal(name, max_life=f"{SHORT_LIFE_S} seconds")
    principal = f"{name}@EO.TEST"
    expired_cache = tmp_path / "expired.ccache"
    _kinit(kdc, principal, keytab, expired_cache)

    _logout()  # the table fixture logged in as eo-writer
    first = _connection(kerberos_conn, kerberos_principal=principal, kerberos_keytab=str(keytab))
    first.open()
    first.table(table).put(b"long", {b"d:a": b"before"}, timestamp=1)
    private_cache = os.environ["KRB5CCNAME"]
    before = _tgt_start(kdc, private_cache)
    time.sleep(SHORT_LIFE_S + 2)  # every ticket issued so far has expired

    first.table(table).put(b"long", {b"d:a": b"after"}, timestamp=2)  # an open connection stays valid
    first.close()
    second = _connection(kerberos_conn, kerberos_principal=principal, kerberos_keytab=str(keytab))
    second.open()  # the client gets new tickets from its keytab
    second.table(table).put(b"new", {b"d:a": b"renewed"}, timestamp=3)
    second.close()
    assert _tgt_start(kdc, private_cache) != before

    expired = _refused(
        kerberos_conn,
        table,
        kerberos_principal=principal,
        kerberos_keytab=None,
        kerberos_ccache=f"FILE:{expired_cache}",
    )
    assert expired.startswith(_where(kerberos_conn, principal))
    assert "expired" in expired.split("cannot open: ")[1].lower()
    assert _cells(kerberos_conn, table) == {
        b"long|d:a": [(b"after", 2), (b"before", 1)],
        b"new|d:a": [(b"renewed", 3)],
    }


CHILD_LOGIN = """
import json, os, sys
from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs
from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.clients.hbase_thrift import hbase_connection
conn = json.loads(sys.stdin.read())
target = EoConnection("eo_hbase_kerberos", host=conn["host"], port=conn["port"], extra=conn["extra"])
kwargs = hbase_connection_kwargs(target)
connection = hbase_connection(kwargs, conn_id="eo_hbase_kerberos")
connection.tables()
cache = os.environ["KRB5CCNAME"].removeprefix("FILE:")
mode = oct(os.stat(cache).st_mode & 0o777)
print(json.dumps({"cache": cache, "exists": os.path.exists(cache), "mode": mode}))
"""


def test_private_ticket_cache_removed_at_exit(kerberos_conn: dict[str, Any]) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD_LOGIN],
        input=json.dumps(kerberos_conn),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    seen = json.loads(child.stdout)
    assert seen["exists"] and seen["mode"] == "0o600"  # MIT writes caches owner-only
    assert not os.path.exists(seen["cache"])
