"""EoThriftConnection over HTTP against loopback listeners (clients/hbase_thrift.py): a server
that closes the connection stays a retryable error (an ``OSError``, not ``HBaseAuthError``);
an answer that is not HTTP is ``HBaseAuthError``; an HTTP error status a ``TTransportException``;
``ssl: true`` on a socket transport never gets this far (refused in the settings)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from thriftpy2.transport import TTransportException

from airflow_provider_eo.clients.hbase_security import HBaseSecurity
from airflow_provider_eo.clients.hbase_thrift import HBaseAuthError, hbase_connection


def _read_request(conn: socket.socket) -> None:
    """Read one whole HTTP request (headers, then ``Content-Length`` bytes of body): closing with
    any of it unread would make the kernel reset the connection before the client reads our answer."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


def _serve(answer: bytes | None) -> Iterator[int]:
    """A listener answering every connection's request with ``answer`` (None: closes at once)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                if answer is not None:
                    _read_request(conn)
                    conn.sendall(answer)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        server.close()


@pytest.fixture
def closing() -> Iterator[int]:
    yield from _serve(None)


@pytest.fixture
def not_http() -> Iterator[int]:
    yield from _serve(b"\x15\x03\x03\x00\x02\x02\x50")  # a TLS alert


@pytest.fixture
def http_500() -> Iterator[int]:
    yield from _serve(b"HTTP/1.1 500 Server Error\r\nContent-Length: 0\r\n\r\n")


def _tables(port: int) -> object:
    security = HBaseSecurity(http=True).to_dict()
    conn = hbase_connection(
        {"host": "127.0.0.1", "port": port, "timeout": 3000, "transport": "http", "security": security},
        conn_id="h",
    )
    try:
        return conn.tables()
    finally:
        conn.close()


def test_a_closed_connection_stays_retryable(closing: int) -> None:
    with pytest.raises(OSError) as caught:
        _tables(closing)
    assert not isinstance(caught.value, HBaseAuthError)


def test_an_answer_that_is_not_http_is_named(not_http: int) -> None:
    with pytest.raises(HBaseAuthError) as caught:
        _tables(not_http)
    assert str(caught.value) == (
        f"HBase connection 'h': Thrift server 127.0.0.1:{not_http} (HTTP): the answer is not HTTP "
        "(BadStatusLine); an HTTPS server needs extra.ssl true"
    )


def test_an_http_error_status_is_a_transport_error(http_500: int) -> None:
    with pytest.raises(TTransportException) as caught:
        _tables(http_500)
    assert (
        caught.value.message
        == f"HBase connection 'h': Thrift server 127.0.0.1:{http_500} (HTTP): HTTP status 500"
    )
