"""A write task's failover to the next Thrift server, against the stack's real Thrift server.

The connection lists a dead server first (a loopback port nothing listens on) and the real
one second; the long-mode proof with a Thrift server killed mid-epoch is
tests/faults/test_thrift_failover.py.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator

import happybase
import pytest

from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs, hbase_endpoints
from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.spark.hbase_sink.hbase_writer import SegmentWriter
from airflow_provider_eo.spark.hbase_sink.segments import Segment
from tests.conftest import StackInfo

pytestmark = pytest.mark.integration

WRITER_LOG = "airflow_provider_eo.spark.hbase_sink.hbase_writer"


@pytest.fixture
def table(stack: StackInfo) -> Iterator[str]:
    name = f"tf_{uuid.uuid4().hex[:10]}"
    conn = happybase.Connection(stack.hbase_host, stack.hbase_port)
    conn.create_table(name, {"cf": {"max_versions": 5}})
    yield name
    conn.delete_table(name, disable=True)
    conn.close()


@pytest.fixture
def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cells(stack: StackInfo, table: str) -> dict[bytes, dict[bytes, list[tuple[bytes, int]]]]:
    conn = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        t = conn.table(table)
        return {
            row: {
                column: t.cells(row, column, versions=5, include_timestamp=True) for column in sorted(cells)
            }
            for row, cells in t.scan()
        }
    finally:
        conn.close()


def test_writer_fails_over_to_the_live_server(
    stack: StackInfo, table: str, dead_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    live = f"{stack.hbase_host}:{stack.hbase_port}"
    connection = EoConnection(
        "eo_hbase", host="127.0.0.1", port=dead_port, extra={"servers": f"127.0.0.1:{dead_port},{live}"}
    )
    servers = hbase_endpoints(connection)
    assert servers == (("127.0.0.1", dead_port), (stack.hbase_host, stack.hbase_port))
    writer = SegmentWriter(
        hbase_connection_kwargs(connection), table, backoff_s=0, servers=servers, task_index=2
    )
    first = Segment(10, 12, 3, puts={b"r1": {b"cf:a": b"x"}}, versioned_puts={b"r2": {b"cf:b": (7, b"y")}})
    second = Segment(13, 14, 2, puts={b"r1": {b"cf:a": b"z"}})
    with caplog.at_level(logging.WARNING, logger=WRITER_LOG):
        writer.write(first)  # task 2 of 2 servers starts on the dead one, fails over
        writer.write(second)  # stays on the live one
    writer.close()
    assert [r.getMessage() for r in caplog.records] == [
        f"HBase write failed table={table} offsets=[10,12] versions 12..7 in 2 calls attempt=1/4 "
        f"failover=127.0.0.1:{dead_port}->{live}: TTransportException"  # refused
    ]
    assert _cells(stack, table) == {
        b"r1": {b"cf:a": [(b"z", 14), (b"x", 12)]},
        b"r2": {b"cf:b": [(b"y", 7)]},
    }


def test_task_index_picks_the_first_server(stack: StackInfo, table: str, dead_port: int) -> None:
    servers = [("127.0.0.1", dead_port), (stack.hbase_host, stack.hbase_port)]
    writer = SegmentWriter({"timeout": 30000}, table, attempts=1, servers=servers, task_index=3)
    assert writer.attempts == 2  # one per server at least
    writer.write(Segment(4, 4, 1, puts={b"r": {b"cf:a": b"v"}}))  # task 3: the live server, first try
    writer.close()
    assert writer.endpoints.current == (stack.hbase_host, stack.hbase_port)
    assert _cells(stack, table) == {b"r": {b"cf:a": [(b"v", 4)]}}
