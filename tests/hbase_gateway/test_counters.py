"""Counters: 8-byte big-endian values, get/set/inc/dec, atomic under concurrent clients."""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable

import happybase
import pytest
from Hbase_thrift import IOError

from tests.hbase_gateway.conftest import Gateway

Factory = Callable[..., happybase.Table]


def test_counter_operations_store_big_endian_i64(make_table: Factory) -> None:
    table = make_table()
    assert table.counter_get(b"r", b"cf:n") == 0
    assert table.row(b"r") == {b"cf:n": struct.pack(">q", 0)}
    assert table.counter_inc(b"r", b"cf:n") == 1
    assert table.counter_inc(b"r", b"cf:n", 41) == 42
    assert table.counter_dec(b"r", b"cf:n", 50) == -8
    assert table.row(b"r") == {b"cf:n": b"\xff\xff\xff\xff\xff\xff\xff\xf8"}
    table.counter_set(b"r", b"cf:n", 2**40)
    assert table.counter_get(b"r", b"cf:n") == 2**40
    assert table.counter_inc(b"r", b"cf:other", -3) == -3


def test_counter_on_non_counter_value_is_an_error(make_table: Factory) -> None:
    table = make_table()
    table.put(b"r", {b"cf:n": b"abc"})
    with pytest.raises(IOError) as err:
        table.counter_inc(b"r", b"cf:n")
    assert (
        err.value.message
        == b"org.apache.hadoop.hbase.DoNotRetryIOException: Field is not a long, it's 3 bytes wide"
    )


def test_counter_after_delete_restarts_at_zero(make_table: Factory) -> None:
    table = make_table()
    table.counter_inc(b"r", b"cf:n", 5)
    table.delete(b"r", columns=[b"cf:n"], timestamp=table.cells(b"r", b"cf:n", include_timestamp=True)[0][1])
    assert table.counter_inc(b"r", b"cf:n", 2) == 2


def test_concurrent_increments_lose_nothing(gateway: Gateway, make_table: Factory) -> None:
    table_name = make_table().name
    threads, per_thread = 6, 100
    returned: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        connection = gateway.connect()
        table = connection.table(table_name)
        seen = [table.counter_inc(b"r", b"cf:n") for _ in range(per_thread)]
        connection.close()
        with lock:
            returned.extend(seen)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    connection = gateway.connect()
    assert connection.table(table_name).counter_get(b"r", b"cf:n") == threads * per_thread
    assert sorted(returned) == list(range(1, threads * per_thread + 1))
    connection.close()
