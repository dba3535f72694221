"""max_versions enforced per family, time_to_live honoured on read (no sleeping: timestamps are explicit)."""

from __future__ import annotations

import time
from collections.abc import Callable

import happybase

Factory = Callable[..., happybase.Table]


def test_max_versions_keeps_only_the_newest(make_table: Factory) -> None:
    table = make_table(cf={"max_versions": 2}, cg={"max_versions": 1})
    for ts in (1, 2, 3, 4):
        table.put(b"r", {b"cf:q": b"v%d" % ts, b"cg:q": b"w%d" % ts}, timestamp=ts)
    assert table.cells(b"r", b"cf:q", include_timestamp=True) == [(b"v4", 4), (b"v3", 3)]
    assert table.cells(b"r", b"cg:q", versions=10) == [b"w4"]
    assert table.cells(b"r", b"cf:q", timestamp=3) == []
    table.put(b"r", {b"cf:q": b"v0"}, timestamp=0)
    assert table.cells(b"r", b"cf:q") == [b"v4", b"v3"]


def test_default_max_versions_is_three(make_table: Factory) -> None:
    table = make_table()
    for ts in range(1, 6):
        table.put(b"r", {b"cf:q": b"%d" % ts}, timestamp=ts)
    assert table.cells(b"r", b"cf:q") == [b"5", b"4", b"3"]


def test_time_to_live_hides_expired_cells(make_table: Factory) -> None:
    table = make_table(short={"time_to_live": 3600}, forever={})
    now_ms = int(time.time() * 1000)
    old = now_ms - 2 * 3600 * 1000
    fresh = now_ms - 60 * 1000
    table.put(b"r", {b"short:q": b"old", b"forever:q": b"old"}, timestamp=old)
    table.put(b"r", {b"short:q": b"fresh"}, timestamp=fresh)
    table.put(b"gone", {b"short:q": b"old"}, timestamp=old)
    assert table.row(b"r") == {b"short:q": b"fresh", b"forever:q": b"old"}
    assert table.cells(b"r", b"short:q", versions=5) == [b"fresh"]
    assert table.row(b"gone") == {}
    assert [k for k, _ in table.scan()] == [b"r"]
    assert table.row(b"r", timestamp=fresh) == {b"forever:q": b"old"}
