"""Acknowledged writes survive kill -9 of the gateway and a restart on the same data dir."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tests.hbase_gateway.conftest import COMBOS, Gateway


@pytest.mark.parametrize(("transport", "protocol"), [COMBOS[0], COMBOS[3]])
def test_everything_acknowledged_survives_kill_9(
    gateway_factory: Callable[[str, str], Gateway], transport: str, protocol: str
) -> None:
    gw = gateway_factory(transport, protocol)
    conn = gw.connect()
    conn.create_table("durable", {"cf": {"max_versions": 2}, "cg": {}, "ch": {"time_to_live": 86400}})
    conn.create_table("off", {"cf": {}})
    conn.disable_table("off")
    table = conn.table("durable")
    with table.batch(timestamp=10) as batch:
        for i in range(1000):
            batch.put(b"r%04d" % i, {b"cf:a": b"%d" % i, b"cf:b": b"x", b"cg:c": b"y"})
    table.delete(b"r0001", columns=[b"cf"], timestamp=20)
    table.counter_inc(b"counter", b"cf:n", 7)
    table.put(b"r0002", {b"cf:a": b"newer"}, timestamp=30)
    gw.kill9()

    gw.start(port=gw.port)
    conn = gw.connect()
    table = conn.table("durable")
    assert conn.tables() == [b"durable", b"off"]
    assert conn.is_table_enabled("off") is False
    assert table.families()[b"cf"]["max_versions"] == 2
    assert table.families()[b"ch"]["time_to_live"] == 86400
    rows = dict(table.scan(columns=[b"cf:a"]))
    assert len(rows) == 999
    assert b"r0001" not in rows
    assert rows[b"r0999"] == {b"cf:a": b"999"}
    assert table.row(b"r0001") == {b"cg:c": b"y"}
    table.put(b"r0001", {b"cf:a": b"still masked"}, timestamp=15)
    assert table.row(b"r0001") == {b"cg:c": b"y"}
    assert table.cells(b"r0002", b"cf:a") == [b"newer", b"2"]
    assert table.counter_get(b"counter", b"cf:n") == 7
    conn.close()


def test_concurrent_writers_killed_mid_flight_lose_no_acknowledged_batch(
    gateway_factory: Callable[[str, str], Gateway],
) -> None:
    gw = gateway_factory("buffered", "binary")
    setup = gw.connect()
    setup.create_table("inflight", {"cf": {}})
    setup.close()
    acknowledged: dict[int, list[int]] = {w: [] for w in range(3)}
    enough = threading.Event()

    def writer(worker: int) -> None:
        conn = gw.connect()
        table = conn.table("inflight")
        for batch_no in range(10_000):
            try:
                with table.batch() as batch:
                    for i in range(50):
                        batch.put(b"w%d-b%05d-%02d" % (worker, batch_no, i), {b"cf:q": b"v"})
            except Exception:
                return
            acknowledged[worker].append(batch_no)
            if all(len(done) >= 5 for done in acknowledged.values()):
                enough.set()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    assert enough.wait(timeout=120)
    gw.kill9()
    for thread in threads:
        thread.join()

    gw.start(port=gw.port)
    conn = gw.connect()
    stored = [key for key, _ in conn.table("inflight").scan(batch_size=1000)]
    per_batch: dict[bytes, int] = {}
    for key in stored:
        per_batch[key[:-3]] = per_batch.get(key[:-3], 0) + 1
    assert set(per_batch.values()) == {50}, "every stored batch is complete (one transaction per call)"
    for worker, batches in acknowledged.items():
        for batch_no in batches:
            assert per_batch.get(b"w%d-b%05d" % (worker, batch_no)) == 50
    conn.close()
