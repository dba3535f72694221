"""The Thrift client's GSSAPI half (clients/hbase_thrift.py) against the stack's real KDC.

No Kerberized Thrift server is involved: the listener below accepts TCP connections and says
nothing. Asserts: the client logs in from eo-writer's keytab by itself (MIT's client keytab, a
private ticket cache holding eo-writer@EO.TEST and hbase/localhost@EO.TEST tickets afterwards);
a service principal the KDC does not know, and a stopped KDC, fail ``open`` with
:class:`HBaseAuthError` naming the connection, the server and the cause, with no secret in it.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs
from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.clients.hbase_thrift import EoThriftConnection, HBaseAuthError, hbase_connection
from eo_devtools.stack.kdc import Kdc
from tests.kerberos_login import restored_login

pytestmark = pytest.mark.integration


@pytest.fixture
def kdc(tmp_path: Path) -> Iterator[Kdc]:
    ports: dict[str, int] = {}
    server = Kdc(tmp_path)
    server.start(ports, lambda p: ports.update(p))
    with restored_login():  # the client's login is undone with the KDC
        try:
            yield server
        finally:
            server.stop(dict(ports), lambda p: None)


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        yield sock.getsockname()[1]


def _connection(kdc: Kdc, port: int, **extra: Any) -> EoThriftConnection:
    settings = {
        "auth": "kerberos",
        "kerberos_principal": "eo-writer@EO.TEST",
        "kerberos_keytab": str(kdc.keytab("eo-writer")),
        "kerberos_service_host": "localhost",
        "krb5_conf": str(kdc.krb5_conf),
        "timeout_ms": "1000",
        **extra,
    }
    kwargs = hbase_connection_kwargs(
        EoConnection("eo_hbase_krb", host="127.0.0.1", port=port, extra=settings)
    )
    conn = hbase_connection({**kwargs, "autoconnect": False}, conn_id="eo_hbase_krb")
    assert isinstance(conn, EoThriftConnection)
    return conn


def test_client_logs_in_from_its_keytab(kdc: Kdc, listener: int) -> None:
    conn = _connection(kdc, listener)
    with pytest.raises(HBaseAuthError) as caught:  # the listener never answers the SASL start
        conn.open()
    assert str(caught.value).startswith(
        f"HBase connection 'eo_hbase_krb': Thrift server 127.0.0.1:{listener} (SASL/GSSAPI as "
        "eo-writer@EO.TEST to hbase/localhost, qop auth-conf): cannot open: "
    )
    ccache = os.environ["KRB5CCNAME"]
    listing = subprocess.run(["klist", "-c", ccache], capture_output=True, text=True, check=True)
    services = [line.split()[-1] for line in listing.stdout.splitlines()[4:] if line[:1].isdigit()]
    assert listing.stdout.splitlines()[1] == "Default principal: eo-writer@EO.TEST"
    assert services == ["krbtgt/EO.TEST@EO.TEST", "hbase/localhost@EO.TEST"]


def test_unknown_service_principal_fails_open(kdc: Kdc, listener: int) -> None:
    conn = _connection(kdc, listener, kerberos_service="hbase-nope")
    with pytest.raises(HBaseAuthError) as caught:
        conn.open()
    assert str(caught.value) == (
        f"HBase connection 'eo_hbase_krb': Thrift server 127.0.0.1:{listener} (SASL/GSSAPI as "
        "eo-writer@EO.TEST to hbase-nope/localhost, qop auth-conf): cannot open: Could not start SASL: "
        "(('Unspecified GSS failure.  Minor code may provide more information', 851968), "
        "('Server hbase-nope/localhost@EO.TEST not found in Kerberos database', -1765328377))"
    )


def test_stopped_kdc_fails_open(kdc: Kdc, listener: int) -> None:
    port = int(kdc.krb5_conf.read_text().split("kdc = 127.0.0.1:")[1].split()[0])
    kdc.stop({"kdc": port}, lambda p: None)
    conn = _connection(kdc, listener)
    with pytest.raises(HBaseAuthError) as caught:
        conn.open()
    assert str(caught.value) == (
        f"HBase connection 'eo_hbase_krb': Thrift server 127.0.0.1:{listener} (SASL/GSSAPI as "
        "eo-writer@EO.TEST to hbase/localhost, qop auth-conf): cannot open: "
        "(('No credentials were supplied, or the credentials were unavailable or inaccessible', 458752), "
        "(\"Cannot contact any KDC for realm 'EO.TEST'\", -1765328228))"
    )
    assert kdc.keytab("eo-writer").read_bytes() not in str(caught.value).encode()
