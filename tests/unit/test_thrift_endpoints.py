"""Several HBase Thrift servers: the connection's ``servers`` and the writer's failover order.

The failover order is observed on real sockets: one port that refuses connections, one
server that accepts and closes at once (no HBase needed: every attempt fails).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator

import pytest

from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs, hbase_endpoints
from airflow_provider_eo.clients.connections import EoConnection, parse_connection
from airflow_provider_eo.spark.hbase_sink.hbase_writer import HBaseWriteError, SegmentWriter
from airflow_provider_eo.spark.hbase_sink.segments import Segment
from airflow_provider_eo.spark.hbase_sink.thrift_endpoints import (
    ThriftEndpoints,
    endpoint_text,
    spark_task_index,
)
from eo_devtools.stack.connections import stack_conn_env


def _conn(host: str | None = "t1", port: int | None = 9091, **extra: object) -> EoConnection:
    return EoConnection("hb", host=host, port=port, extra=dict(extra))


@pytest.mark.parametrize(
    ("conn", "expected"),
    [
        (_conn(None, None), (("localhost", 9090),)),
        (_conn(), (("t1", 9091),)),
        (_conn(servers="t1:9091,t2:9092 , t3"), (("t1", 9091), ("t2", 9092), ("t3", 9090))),
        (_conn(servers="t2:9092 t1:9091"), (("t1", 9091), ("t2", 9092))),  # host/port stays first
        (_conn(servers='["t1:9091", "t2:9092"]'), (("t1", 9091), ("t2", 9092))),
        (_conn(servers=["t2:9092", "t2:9092"]), (("t1", 9091), ("t2", 9092))),
        (_conn(None, None, servers="t2:9092,t1:9091"), (("t2", 9092), ("t1", 9091))),
        (_conn(extra__eo_hbase__servers="t2:9092"), (("t1", 9091), ("t2", 9092))),  # the UI form field
        (_conn(servers="[::1]:9093,[fe80::1]"), (("t1", 9091), ("::1", 9093), ("fe80::1", 9090))),
        (_conn(servers=""), (("t1", 9091),)),
    ],
)
def test_endpoints_in_order(conn: EoConnection, expected: tuple[tuple[str, int], ...]) -> None:
    assert hbase_endpoints(conn) == expected
    kwargs = hbase_connection_kwargs(conn)
    assert (kwargs["host"], kwargs["port"]) == expected[0]  # single-server callers get the first


BAD = "HBase connection 'hb': bad Thrift server"


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ("t2:x", f"{BAD} 't2:x' in extra.servers: port must be a number from 1 to 65535"),
        ("t2:0", f"{BAD} 't2:0' in extra.servers: port must be a number from 1 to 65535"),
        ("t2:65536", f"{BAD} 't2:65536' in extra.servers: port must be a number from 1 to 65535"),
        ("t2:9092,:9093", f"{BAD} ':9093' in extra.servers: no host"),
        ("::1:9093", f"{BAD} '::1:9093' in extra.servers: write an IPv6 address as '[address]:port'"),
        ("[::1", f"{BAD} '[::1' in extra.servers: expected '[address]:port'"),
        ('["t2:9092", 9093]', f"{BAD} 9093 in extra.servers: expected 'host:port'"),
        ('["t2:9092", " "]', f"{BAD} ' ' in extra.servers: expected 'host:port'"),
        ('["t2:9092"', "HBase connection 'hb': extra.servers is not valid JSON: "),
        (
            {"t2": 9092},
            "HBase connection 'hb': extra.servers must be 'host:port,host:port' or a JSON list of "
            "'host:port' strings, not dict",
        ),
    ],
)
def test_bad_servers_are_named(servers: object, message: str) -> None:
    for call in (hbase_endpoints, hbase_connection_kwargs):
        with pytest.raises(ValueError) as info:
            call(_conn(servers=servers))
        assert str(info.value).startswith(message), str(info.value)


def test_rotation_starts_at_the_task_index_and_wraps() -> None:
    servers = [("a", 1), ("b", 2), ("c", 3)]
    endpoints = ThriftEndpoints({"host": "x", "port": 9, "timeout": 5}, servers, first=4)
    assert (endpoints.current, endpoints.connection_kwargs()) == (
        ("b", 2),
        {"timeout": 5, "host": "b", "port": 2},
    )
    assert [endpoints.advance() for _ in range(3)] == [
        (("b", 2), ("c", 3)),
        (("c", 3), ("a", 1)),
        (("a", 1), ("b", 2)),
    ]
    single = ThriftEndpoints({"host": "x", "port": 9}, (), first=7)
    assert (single.servers, single.failover_text(*single.advance())) == ((("x", 9),), "reconnect=x:9")
    assert endpoints.failover_text(("a", 1), ("::1", 2)) == "failover=a:1->[::1]:2"
    assert endpoint_text(("h", 5)) == "h:5"
    assert spark_task_index() == 0  # outside a Spark task


@pytest.fixture
def refusing_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def closing_port() -> Iterator[int]:
    """A loopback server that reads each request and ends the connection without an answer
    (the client reads EOF), one connection at a time."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(1)  # the request has come
                conn.shutdown(socket.SHUT_WR)  # EOF for the client, without a reset
                while conn.recv(65536):  # until the client closes
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    server.shutdown(socket.SHUT_RDWR)  # wakes the accept (Linux)
    server.close()
    thread.join(5)
    assert not thread.is_alive()


def test_writer_fails_over_in_list_order(
    refusing_port: int, closing_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    dead, closing = ("127.0.0.1", refusing_port), ("127.0.0.1", closing_port)
    servers = [dead, closing, ("127.0.0.1", refusing_port)]  # a duplicate counts once
    writer = SegmentWriter({"timeout": 5000}, "t", attempts=3, backoff_s=0, servers=servers, task_index=3)
    assert (writer.endpoints.servers, writer.attempts) == ((dead, closing), 3)
    segment = Segment(5, 9, 5, puts={b"r": {b"cf:a": b"1"}})
    logger = "airflow_provider_eo.spark.hbase_sink.hbase_writer"
    with caplog.at_level(logging.WARNING, logger=logger), pytest.raises(HBaseWriteError) as info:
        writer.write(segment)
    a, b = endpoint_text(dead), endpoint_text(closing)
    failed = "HBase write failed table=t offsets=[5,9] version 9"
    assert [r.getMessage() for r in caplog.records] == [
        f"{failed} attempt=1/3 failover={b}->{a}: TTransportException",  # EOF from the closing server
        f"{failed} attempt=2/3 failover={a}->{b}: TTransportException",  # refused
        f"{failed} attempt=3/3 failover={b}->{a}: TTransportException",
    ]
    assert str(info.value).startswith(
        "cannot write to HBase table 't': segment of offsets [5, 9] (version 9) failed 3 times; last error: "
    )


def test_attempts_cover_every_server() -> None:
    servers = [("127.0.0.1", port) for port in range(1, 7)]
    assert SegmentWriter({}, "t", attempts=4, servers=servers).attempts == 6
    assert SegmentWriter({"host": "h", "port": 1}, "t", attempts=1).attempts == 1


def test_stack_connection_lists_every_thrift_server() -> None:
    several = stack_conn_env("postgresql://u@h/eo", "127.0.0.1:1", [7001, 7002])["AIRFLOW_CONN_EO_HBASE"]
    assert json.loads(several)["extra"]["servers"] == "127.0.0.1:7001,127.0.0.1:7002"
    conn = parse_connection("eo_hbase", several)
    assert hbase_endpoints(conn) == (("127.0.0.1", 7001), ("127.0.0.1", 7002))
    single = stack_conn_env("postgresql://u@h/eo", "127.0.0.1:1", 7001)["AIRFLOW_CONN_EO_HBASE"]
    assert "servers" not in json.loads(single)["extra"]
    assert hbase_endpoints(parse_connection("eo_hbase", single)) == (("127.0.0.1", 7001),)
