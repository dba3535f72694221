"""HBase's Thrift1 server over HTTPS (:mod:`eo_devtools.stack.hbase_thrift_tls`, a real second
Thrift JVM in HBase's HTTP mode with TLS, against the stack's HBase), through the provider's
own path (``AIRFLOW_CONN_EO_HBASE_TLS`` -> :class:`EoHBaseHook` -> ``hbase_connection`` ->
``EoThriftConnection`` over thriftpy2's ``THttpClient``). Cells written with explicit
timestamps read back as exact bytes and versions (hook and the Spark side's SegmentWriter);
the wrong CA fails naming the connection and "certificate verify failed" and writes nothing;
a plain-HTTP client at the HTTPS port fails clearly; the keystore and its site file are mode
600. The module starts the part on the session's stack when it does not run (CI's stack is
not ``--tls``) and stops it after."""

from __future__ import annotations

import json
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import happybase
import pytest
from thriftpy2.transport import TTransportException

from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs
from airflow_provider_eo.clients.connections import parse_connection
from airflow_provider_eo.clients.hbase_thrift import HBaseAuthError, hbase_connection
from airflow_provider_eo.hooks.hbase import EoHBaseHook
from airflow_provider_eo.spark.hbase_sink.hbase_writer import HBaseWriteError, SegmentWriter
from airflow_provider_eo.spark.hbase_sink.segment_batches import SegmentBatch
from airflow_provider_eo.spark.hbase_sink.segments import Segment
from eo_devtools.stack.hbase_thrift_tls import PASSWORD_KEY, THRIFT_TLS_PORT_KEY, HBaseThriftTlsPart
from eo_devtools.stack.pki import stack_pki
from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.stack import LocalStack
from tests.conftest import StackInfo

pytestmark = pytest.mark.integration

CONN_ID = "eo_hbase_tls"


@pytest.fixture(scope="module")
def tls_conn(stack: StackInfo) -> Iterator[str]:
    """``AIRFLOW_CONN_EO_HBASE_TLS`` of the stack, its HTTPS Thrift part started if not running."""
    local = LocalStack(stack.state_dir)
    part = HBaseThriftTlsPart(stack.state_dir)
    started = THRIFT_TLS_PORT_KEY not in local._recorded_ports()  # a reused stack may run it
    part.start(local._recorded_ports(), local._write_ports)
    try:
        yield local.conn_env()["AIRFLOW_CONN_EO_HBASE_TLS"]
    finally:
        if started:
            part.stop(local._recorded_ports(), local._write_ports)


@pytest.fixture
def table(stack: StackInfo) -> Iterator[happybase.Table]:
    """A fresh table (families ``d``, 5 versions), made and dropped over the plain connection."""
    plain = happybase.Connection(stack.hbase_host, stack.hbase_port, timeout=30000)
    name = f"eo_tls_{uuid.uuid4().hex[:10]}"
    plain.create_table(name, {"d": {"max_versions": 5}})
    try:
        yield plain.table(name)
    finally:
        plain.delete_table(name, disable=True)
        plain.close()


def _cells(table: happybase.Table, row: bytes) -> list[tuple[bytes, int, bytes]]:
    return sorted(
        (column, ts, value)
        for column in table.row(row)
        for value, ts in table.cells(row, column, versions=10, include_timestamp=True)
    )


def test_exact_cells_over_https(
    tls_conn: str, table: happybase.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_EO_HBASE_TLS", tls_conn)
    hook = EoHBaseHook(hbase_conn_id=CONN_ID)
    assert hook.connection_kwargs["security"]["http"] is True
    conn = hook.get_conn()
    try:
        assert table.name in conn.tables()
        remote = conn.table(table.name.decode())
        remote.put(b"r1", {b"d:a": b"\x00\xffone"}, timestamp=101)
        remote.put(b"r1", {b"d:a": b"two\n", b"d:b": b""}, timestamp=202)
        assert remote.cells(b"r1", b"d:a", versions=5, include_timestamp=True) == [
            (b"two\n", 202),
            (b"\x00\xffone", 101),
        ]
    finally:
        conn.close()
    assert _cells(table, b"r1") == [
        (b"d:a", 101, b"\x00\xffone"),
        (b"d:a", 202, b"two\n"),
        (b"d:b", 202, b""),
    ]


def test_segment_writer_over_https(tls_conn: str, table: happybase.Table) -> None:
    kwargs = hbase_connection_kwargs(parse_connection(CONN_ID, tls_conn))
    writer = SegmentWriter(kwargs, table.name.decode(), backoff_s=0, connection_id=CONN_ID)
    try:
        writer.write(Segment(7, 9, 3, puts={b"s": {b"d:x": b"\x01\x02"}}))
        writer.write(Segment(10, 10, 1, versioned_puts={b"v": {b"d:y": (5, b"five")}}))
    finally:
        writer.close()
    assert _cells(table, b"s") == [(b"d:x", 9, b"\x01\x02")]
    assert _cells(table, b"v") == [(b"d:y", 5, b"five")]


def test_a_batch_of_several_calls_over_https_goes_one_request_at_a_time(
    tls_conn: str, table: happybase.Table
) -> None:
    """HTTP carries one request per flush: a batch's calls are not pipelined there."""
    kwargs = hbase_connection_kwargs(parse_connection(CONN_ID, tls_conn))
    writer = SegmentWriter(kwargs, table.name.decode(), backoff_s=0, connection_id=CONN_ID)
    batch = SegmentBatch()
    batch.add(Segment(0, 2, 3, 10, puts={b"b": {b"d:x": b"p0"}}), "t/0[0,3)")
    batch.add(Segment(0, 4, 5, 10, puts={b"b": {b"d:y": b"p1"}}), "t/1[0,5)")
    batch.add(Segment(5, 7, 3, 10, puts={b"b": {b"d:x": b"p1"}}), "t/1[5,8)")
    try:
        writer.write_batch(batch)
    finally:
        writer.close()
    assert _cells(table, b"b") == [(b"d:x", 2, b"p0"), (b"d:x", 7, b"p1"), (b"d:y", 4, b"p1")]


def test_wrong_ca_fails_naming_the_cause_and_writes_nothing(
    stack: StackInfo, tls_conn: str, table: happybase.Table
) -> None:
    table.put(b"r", {b"d:a": b"before"}, timestamp=1)
    value = json.loads(tls_conn)
    value["extra"]["ssl_ca"] = str(stack_pki(stack.state_dir).other_ca)
    kwargs = hbase_connection_kwargs(parse_connection(CONN_ID, json.dumps(value)))
    with pytest.raises(HBaseAuthError) as caught:
        conn = hbase_connection(kwargs, conn_id=CONN_ID)
        conn.table(table.name.decode()).put(b"r", {b"d:a": b"after"}, timestamp=2)
    text = str(caught.value)
    assert f"HBase connection {CONN_ID!r}: Thrift server 127.0.0.1:{value['port']} (HTTPS)" in text
    assert "certificate verify failed" in text
    assert _cells(table, b"r") == [(b"d:a", 1, b"before")]


def test_plain_http_at_the_https_port_fails_clearly(tls_conn: str, table: happybase.Table) -> None:
    value = json.loads(tls_conn)
    value["extra"] = {"transport": "http"}
    kwargs = hbase_connection_kwargs(parse_connection(CONN_ID, json.dumps(value)))
    conn = hbase_connection(kwargs, conn_id=CONN_ID)
    try:
        with pytest.raises(HBaseAuthError) as caught:
            conn.table(table.name.decode()).put(b"r", {b"d:a": b"plain"}, timestamp=3)
    finally:
        conn.close()
    assert str(caught.value) == (
        f"HBase connection {CONN_ID!r}: Thrift server 127.0.0.1:{value['port']} (HTTP): the answer is "
        "not HTTP (BadStatusLine); an HTTPS server needs extra.ssl true"
    )
    assert table.row(b"r") == {}


def test_keystore_and_site_are_private(stack: StackInfo, tls_conn: str) -> None:
    service = HBaseThriftTlsPart(stack.state_dir).service(LocalStack(stack.state_dir)._recorded_ports())
    for path in (service.keystore, service.site_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(service.conf_dir.stat().st_mode) == 0o700
    assert PASSWORD_KEY in service.site_file.read_text()
    password = service.site_file.read_text().split(f"<name>{PASSWORD_KEY}</name><value>")[1].split("<")[0]
    assert password not in tls_conn
    cmdline = Path(f"/proc/{service.pid_path.read_text().strip()}/cmdline").read_bytes()
    assert password.encode() not in cmdline


def test_a_server_down_stays_a_transport_error(tls_conn: str) -> None:
    """Nothing listening: thriftpy2's TTransportException (the writer retries and fails over)."""
    value = json.loads(tls_conn)
    value["port"] = find_free_port()
    kwargs = hbase_connection_kwargs(parse_connection(CONN_ID, json.dumps(value)))
    with pytest.raises(TTransportException) as caught:
        hbase_connection(kwargs, conn_id=CONN_ID)
    assert str(caught.value.message).startswith(
        f"HBase connection {CONN_ID!r}: Thrift server 127.0.0.1:{value['port']} (HTTPS): could not connect: "
    )


def test_the_writer_does_not_retry_a_refused_certificate(
    stack: StackInfo, tls_conn: str, table: happybase.Table
) -> None:
    value = json.loads(tls_conn)
    value["extra"]["ssl_ca"] = str(stack_pki(stack.state_dir).other_ca)
    kwargs = hbase_connection_kwargs(parse_connection(CONN_ID, json.dumps(value)))
    writer = SegmentWriter(kwargs, table.name.decode(), attempts=3, backoff_s=0, connection_id=CONN_ID)
    try:
        with pytest.raises(HBaseWriteError, match=r"is not retried: .*certificate verify failed"):
            writer.write(Segment(1, 1, 1, puts={b"w": {b"d:x": b"1"}}))
    finally:
        writer.close()
    assert table.row(b"w") == {}


def test_status_shows_the_part_healthy(stack: StackInfo, tls_conn: str) -> None:
    port = json.loads(tls_conn)["port"]
    entry = LocalStack(stack.state_dir).status()["hbase-thrift-https"]
    assert (entry["healthy"], entry["port"], entry["url"]) == (True, port, f"https://127.0.0.1:{port}/")
