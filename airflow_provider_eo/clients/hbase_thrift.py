"""happybase connections that speak SASL/GSSAPI (Kerberos) or HTTP(S) to HBase's Thrift1 server.

Contract: :func:`hbase_connection` takes :func:`.connection_settings.hbase_connection_kwargs`'
output and returns a ``happybase.Connection``: a plain one without ``security``, else an
:class:`EoThriftConnection`. For ``auth: kerberos`` its socket is wrapped in thriftpy2's SASL
client transport with pure-sasl's GSSAPI mechanism and the connection's ``sasl_qop`` (the
server's buffered transport: HBase frames SASL itself). The login is MIT krb5's own: with a
keytab, ``KRB5_CLIENT_KTNAME`` names it and ``KRB5CCNAME`` a private ticket cache of this
process and login, deleted when the process exits (GSSAPI gets and re-gets tickets from the
keytab when they expire); with a
``kerberos_ccache``, that cache. These variables are process-wide: one Kerberos identity per
process (another one is refused with :class:`HBaseAuthError`). ``transport: http`` talks Thrift
(binary protocol) over HTTP with thriftpy2's ``THttpClient`` to ``http(s)://host:port/``, HBase's
``hbase.regionserver.thrift.http`` mode; ``ssl: true`` makes it HTTPS verifying the server's
certificate and host name against ``ssl_ca`` (else the system's CAs): :meth:`EoThriftConnection.open`
connects and, for HTTPS, completes a TLS handshake first, so a bad certificate fails there.
Failures to open raise :class:`HBaseAuthError` naming the connection, the server and the cause,
never a secret (keytab bytes are only read by libkrb5); a server that is down or unreachable
raises thriftpy2's ``TTransportException`` (retryable: the writer's retry and failover apply).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import http.client
import os
import socket
import ssl
import struct
import tempfile
from collections.abc import Mapping
from typing import Any

import happybase
from Hbase_thrift import Hbase
from thriftpy2.http import THttpClient
from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.protocol.compact import TCompactProtocol
from thriftpy2.thrift import TClient
from thriftpy2.transport import TSocket, TTransportException
from thriftpy2.transport.sasl import TCySaslClientTransport

from airflow_provider_eo.clients.hbase_security import HBaseSecurity


class HBaseAuthError(RuntimeError):
    """Opening a secured Thrift connection failed (names the connection, the server, the cause)."""


def kerberos_env(security: HBaseSecurity) -> dict[str, str]:
    """The MIT krb5 variables this process needs for ``security``'s login (see the module)."""
    env: dict[str, str] = {}
    if security.krb5_conf:
        env["KRB5_CONFIG"] = security.krb5_conf
    if security.kerberos_keytab:
        env["KRB5_CLIENT_KTNAME"] = f"FILE:{security.kerberos_keytab}"
        login = f"{security.kerberos_principal}\0{security.kerberos_keytab}\0{security.krb5_conf}"
        tag = hashlib.sha256(login.encode()).hexdigest()[:12]  # a login of its own: a cache of its own
        private = os.path.join(tempfile.gettempdir(), f"eo-krb5cc-{os.getuid()}-{os.getpid()}-{tag}")
        env["KRB5CCNAME"] = f"FILE:{private}"
    elif security.kerberos_ccache:
        env["KRB5CCNAME"] = security.kerberos_ccache
    return env


_applied: dict[str, str] = {}


def _apply_kerberos_env(conn_id: str, security: HBaseSecurity) -> None:
    """Set :func:`kerberos_env` in ``os.environ``; refuse a second, different identity."""
    wanted = kerberos_env(security)
    if _applied and _applied != wanted:
        raise HBaseAuthError(
            f"HBase connection {conn_id!r}: this process already logs in to Kerberos as another "
            "identity (another keytab, ticket cache or krb5.conf); one Kerberos identity per process"
        )
    if not _applied and wanted.get("KRB5_CLIENT_KTNAME"):  # a private cache: gone when the process ends
        atexit.register(_remove_private_cache, wanted["KRB5CCNAME"].removeprefix("FILE:"))
    os.environ.update(wanted)
    _applied.update(wanted)


def _remove_private_cache(path: str) -> None:
    """Delete this process's private ticket cache (a process killed outright leaves it behind)."""
    with contextlib.suppress(OSError):
        os.remove(path)


class _PureSaslClient:
    """pure-sasl's GSSAPI client behind the ``sasl.Client`` interface thriftpy2's transport uses."""

    def __init__(self, host: str, security: HBaseSecurity) -> None:
        from puresasl.client import SASLClient

        self._client = SASLClient(
            host,
            security.kerberos_service,
            mechanism="GSSAPI",
            qops=[security.sasl_qop.encode()],
            principal=security.kerberos_principal,
        )
        self._error = ""

    def _call(self, fn: Any, *args: Any) -> tuple[bool, bytes]:
        try:
            return True, fn(*args)
        except Exception as exc:
            self._error = str(exc)
            return False, b""

    def start(self, mechanism: str) -> tuple[bool, str, bytes]:
        ok, response = self._call(self._client.process)
        return ok, mechanism, response

    def step(self, challenge: bytes) -> tuple[bool, bytes]:
        return self._call(self._client.process, challenge)

    def encode(self, data: bytes) -> tuple[bool, bytes]:
        if self._client.qop == b"auth":  # the transport then frames plain data itself
            return True, data
        ok, wrapped = self._call(self._client.wrap, data)
        return ok, struct.pack(">I", len(wrapped)) + wrapped

    def decode(self, data: bytes) -> tuple[bool, bytes]:
        return self._call(self._client.unwrap, data[4:])

    def getError(self) -> str:
        return self._error

    @property
    def qop(self) -> str:
        """The quality of protection the handshake settled on (empty before it ends)."""
        return bytes(self._client.qop or b"").decode()


class _HttpClient(THttpClient):
    """thriftpy2's ``THttpClient`` with its failures named: an answer that is not HTTP (a plain
    HTTP client at an HTTPS port) raises :class:`HBaseAuthError`, a status other than 200 a
    ``TTransportException``, both starting with ``where``."""

    def __init__(self, uri: str, where: str, **kwargs: Any) -> None:
        super().__init__(uri, **kwargs)
        self.where = where

    def flush(self) -> None:
        try:
            super().flush()
        except http.client.HTTPException as exc:
            self.close()
            if isinstance(exc, OSError):  # RemoteDisconnected: the server went away, retryable
                raise
            raise HBaseAuthError(
                f"{self.where}: the answer is not HTTP ({type(exc).__name__}); "
                "an HTTPS server needs extra.ssl true"
            ) from exc
        code: Any = getattr(self, "code", 200)
        if code != 200:
            raise TTransportException(TTransportException.UNKNOWN, f"{self.where}: HTTP status {code}")


class EoThriftConnection(happybase.Connection):
    """A ``happybase.Connection`` over SASL/GSSAPI or HTTP(S) (``security``, see the module)."""

    def __init__(self, *args: Any, security: Mapping[str, Any], conn_id: str | None = None, **kwargs: Any):
        self.security = HBaseSecurity.from_dict(security)
        self.conn_id = conn_id or "?"
        self.sasl_client: _PureSaslClient | None = None  # the current transport's, once opened
        if kwargs.get("transport") == "http":
            kwargs["transport"] = "buffered"  # happybase knows no http; _refresh_thrift_client builds it
        super().__init__(*args, **kwargs)

    def ssl_context(self) -> ssl.SSLContext:
        """Verifies the server's certificate chain (against ``ssl_ca``) and its host name."""
        return ssl.create_default_context(cafile=self.security.ssl_ca)

    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.security.ssl else 'http'}://{host}:{self.port}/"

    def _refresh_thrift_client(self) -> None:
        security = self.security
        self._socket: Any = None
        if security.http:
            self.transport = _HttpClient(
                self.url(),
                self.where(),
                timeout=self.timeout,
                ssl_context_factory=self.ssl_context if security.ssl else None,
                keep_alive=True,
            )
            # happybase's Cython protocols take Cython transports only: the pure-Python ones here
            pure = TCompactProtocol if "Compact" in self._protocol_class.__name__ else TBinaryProtocol
            self.client = TClient(Hbase, pure(self.transport, decode_response=False))
            return
        self._socket = TSocket(host=self.host, port=self.port, socket_timeout=self.timeout)
        if security.kerberos:
            host = security.kerberos_service_host or self.host

            def sasl_client() -> _PureSaslClient:
                self.sasl_client = _PureSaslClient(host, security)
                return self.sasl_client

            self.transport = TCySaslClientTransport(sasl_client, "GSSAPI", self._socket)
        else:
            self.transport = self._transport_class(self._socket)
        protocol = self._protocol_class(self.transport, decode_response=False)
        self.client = TClient(Hbase, protocol)

    def where(self) -> str:
        security = self.security
        parts = []
        if security.kerberos:
            host = security.kerberos_service_host or self.host
            parts.append(
                f"SASL/GSSAPI as {security.kerberos_principal or 'the ticket cache'}"
                f" to {security.kerberos_service}/{host}, qop {security.sasl_qop}"
            )
        if security.http:
            parts.append("HTTPS" if security.ssl else "HTTP")
        return (
            f"HBase connection {self.conn_id!r}: Thrift server {self.host}:{self.port} ({', '.join(parts)})"
        )

    def _check_http_server(self) -> None:
        """Connect (and complete a TLS handshake): separates a server down from a refused one."""
        timeout = self.timeout / 1000.0 if self.timeout else None
        try:
            raw = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as exc:
            raise TTransportException(
                TTransportException.NOT_OPEN, f"{self.where()}: could not connect: {exc}"
            ) from exc
        try:
            if self.security.ssl:
                with self.ssl_context().wrap_socket(raw, server_hostname=self.host):
                    pass
        except ssl.SSLError as exc:
            raise HBaseAuthError(f"{self.where()}: TLS handshake failed: {exc}") from exc
        except OSError as exc:  # reset or closed mid-handshake: the server went away
            raise TTransportException(
                TTransportException.NOT_OPEN, f"{self.where()}: TLS handshake broke off: {exc}"
            ) from exc
        finally:
            raw.close()

    def open(self) -> None:
        if self.transport.is_open():
            return
        if self.security.http:
            self._check_http_server()
            self.transport.open()
            return
        if self.security.kerberos:
            _apply_kerberos_env(self.conn_id, self.security)
        try:
            self.transport.open()
        except Exception as exc:
            connected = self._socket.is_open()  # the handshake failed, not the connection
            self.transport.close()
            if not connected:
                raise  # a server down or unreachable: the writer's retry and failover apply
            cause = getattr(exc, "message", None) or str(exc)  # thrift's exceptions carry a message
            raise HBaseAuthError(f"{self.where()}: cannot open: {cause}{self._hint(cause)}") from exc

    def _hint(self, cause: str) -> str:
        """What a cause means for this connection's settings, when MIT's words do not say it."""
        security = self.security
        if security.kerberos_keytab and "Can't find client principal" in cause:
            return f" (the keytab {security.kerberos_keytab} holds no key of {security.kerberos_principal})"
        return ""


def hbase_connection(kwargs: Mapping[str, Any], *, conn_id: str | None = None) -> happybase.Connection:
    """A happybase connection from ``hbase_connection_kwargs`` output (see the module)."""
    settings = dict(kwargs)
    security = settings.pop("security", None)
    if security is None:
        return happybase.Connection(**settings)
    return EoThriftConnection(security=security, conn_id=conn_id, **settings)
