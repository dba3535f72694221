"""Concurrent clients: parallel batches and read-modify-write patterns lose no update."""

from __future__ import annotations

import threading
from collections.abc import Callable

import happybase

from tests.hbase_gateway.conftest import Gateway

Factory = Callable[..., happybase.Table]


def test_parallel_batches_from_many_clients_all_land(gateway: Gateway, make_table: Factory) -> None:
    name = make_table().name
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            conn = gateway.connect()
            with conn.table(name).batch(batch_size=200) as batch:
                for i in range(500):
                    batch.put(b"%d-%04d" % (worker, i), {b"cf:w": b"%d" % worker, b"cf:i": b"%d" % i})
            conn.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    conn = gateway.connect()
    rows = list(conn.table(name).scan())
    assert len(rows) == 2500
    assert rows[1234] == (b"2-0234", {b"cf:w": b"2", b"cf:i": b"234"})
    conn.close()


def test_scanner_is_not_disturbed_by_concurrent_writes(gateway: Gateway, make_table: Factory) -> None:
    table = make_table()
    with table.batch() as batch:
        for i in range(2000):
            batch.put(b"k%05d" % i, {b"cf:q": b"v"})
    scanned: list[bytes] = []
    writer_conn = gateway.connect()
    writer = writer_conn.table(table.name)
    for n, (key, _) in enumerate(table.scan(batch_size=100)):
        scanned.append(key)
        if n % 300 == 0:
            writer.put(b"k%05d" % (1999 - n), {b"cf:other": b"x"})
    writer_conn.close()
    assert scanned == [b"k%05d" % i for i in range(2000)]
