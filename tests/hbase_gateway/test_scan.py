"""Every happybase scan option: ranges, prefix, columns, timestamp, batch_size, scan_batching, limit,
sorted_columns, reverse; plus the raw scannerOpen* calls and scanner id errors."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import happybase
import pytest
from Hbase_thrift import IllegalArgument

Factory = Callable[..., happybase.Table]
KEYS = [b"a1", b"a2", b"a3", b"b1", b"b2", b"c1"]


@pytest.fixture
def table(make_table: Factory) -> happybase.Table:
    table = make_table(cf={}, cg={})
    with table.batch(timestamp=100) as batch:
        for key in KEYS:
            batch.put(key, {b"cf:x": key + b"x", b"cf:y": key + b"y", b"cg:z": key + b"z"})
    table.put(b"a1", {b"cf:x": b"a1x-new"}, timestamp=200)
    return table


def keys(rows: object) -> list[bytes]:
    return [k for k, _ in rows]  # type: ignore[attr-defined]


def test_full_scan_returns_rows_in_order_with_latest_values(table: happybase.Table) -> None:
    rows = list(table.scan())
    assert keys(rows) == KEYS
    assert rows[0] == (b"a1", {b"cf:x": b"a1x-new", b"cf:y": b"a1y", b"cg:z": b"a1z"})


def test_row_start_inclusive_row_stop_exclusive(table: happybase.Table) -> None:
    assert keys(table.scan(row_start=b"a2", row_stop=b"b2")) == [b"a2", b"a3", b"b1"]
    assert keys(table.scan(row_start=b"a25")) == [b"a3", b"b1", b"b2", b"c1"]
    assert keys(table.scan(row_stop=b"a3")) == [b"a1", b"a2"]


def test_row_prefix(table: happybase.Table) -> None:
    assert keys(table.scan(row_prefix=b"b")) == [b"b1", b"b2"]
    assert keys(table.scan(row_prefix=b"zz")) == []


def test_columns(table: happybase.Table) -> None:
    rows = list(table.scan(row_prefix=b"c", columns=[b"cf:y", b"cg"]))
    assert rows == [(b"c1", {b"cf:y": b"c1y", b"cg:z": b"c1z"})]


def test_timestamp_and_include_timestamp(table: happybase.Table) -> None:
    rows = list(table.scan(row_stop=b"a2", timestamp=200, include_timestamp=True))
    assert rows == [(b"a1", {b"cf:x": (b"a1x", 100), b"cf:y": (b"a1y", 100), b"cg:z": (b"a1z", 100)})]
    assert list(table.scan(timestamp=100)) == []


@pytest.mark.parametrize("batch_size", [1, 2, 1000])
def test_batch_size_does_not_change_results(table: happybase.Table, batch_size: int) -> None:
    assert keys(table.scan(batch_size=batch_size)) == KEYS


def test_limit(table: happybase.Table) -> None:
    assert keys(table.scan(limit=4, batch_size=3)) == KEYS[:4]
    assert keys(table.scan(row_start=b"b", limit=10)) == [b"b1", b"b2", b"c1"]


def test_scan_batching_splits_rows_into_partial_results(table: happybase.Table) -> None:
    rows = list(table.scan(row_stop=b"a3", scan_batching=2, sorted_columns=True))
    assert rows == [
        (b"a1", OrderedDict([(b"cf:x", b"a1x-new"), (b"cf:y", b"a1y")])),
        (b"a1", OrderedDict([(b"cg:z", b"a1z")])),
        (b"a2", OrderedDict([(b"cf:x", b"a2x"), (b"cf:y", b"a2y")])),
        (b"a2", OrderedDict([(b"cg:z", b"a2z")])),
    ]


def test_sorted_columns_returns_ordered_dicts(table: happybase.Table) -> None:
    ((key, columns),) = list(table.scan(row_prefix=b"b2", sorted_columns=True, include_timestamp=True))
    assert key == b"b2"
    assert isinstance(columns, OrderedDict)
    assert list(columns.items()) == [
        (b"cf:x", (b"b2x", 100)),
        (b"cf:y", (b"b2y", 100)),
        (b"cg:z", (b"b2z", 100)),
    ]


def test_reverse(table: happybase.Table) -> None:
    assert keys(table.scan(reverse=True)) == KEYS[::-1]
    assert keys(table.scan(row_start=b"b2", row_stop=b"a1", reverse=True)) == [b"b2", b"b1", b"a3", b"a2"]
    assert keys(table.scan(row_prefix=b"a", reverse=True)) == [b"a3", b"a2", b"a1"]
    assert keys(table.scan(reverse=True, limit=2, batch_size=1)) == [b"c1", b"b2"]


def test_scan_over_many_pages_sees_every_row_once(make_table: Factory) -> None:
    table = make_table()
    with table.batch() as batch:
        for i in range(1234):
            batch.put(b"k%05d" % i, {b"cf:q": b"%d" % i})
    assert keys(table.scan(batch_size=100)) == [b"k%05d" % i for i in range(1234)]
    assert keys(table.scan(reverse=True)) == [b"k%05d" % i for i in reversed(range(1234))]


def test_scanner_sees_rows_deleted_or_empty_as_absent(table: happybase.Table) -> None:
    table.delete(b"a2")
    table.delete(b"b1", columns=[b"cf"])
    assert keys(table.scan()) == [b"a1", b"a3", b"b1", b"b2", b"c1"]
    assert keys(table.scan(columns=[b"cf"])) == [b"a1", b"a3", b"b2", b"c1"]


def test_legacy_scanner_open_calls(table: happybase.Table, conn: happybase.Connection) -> None:
    client = conn.client
    sid = client.scannerOpenWithStop(table.name, b"a2", b"b2", [b"cf:x"], {})
    assert [(r.row, r.columns[b"cf:x"].value) for r in client.scannerGetList(sid, 10)] == [
        (b"a2", b"a2x"),
        (b"a3", b"a3x"),
        (b"b1", b"b1x"),
    ]
    client.scannerClose(sid)
    sid = client.scannerOpenWithPrefix(table.name, b"b", None, {})
    assert [r.row for r in client.scannerGet(sid)] == [b"b1"]
    assert [r.row for r in client.scannerGet(sid)] == [b"b2"]
    assert client.scannerGet(sid) == []
    client.scannerClose(sid)
    sid = client.scannerOpenTs(table.name, b"a1", [b"cf:x"], 150, {})
    assert client.scannerGetList(sid, 1)[0].columns[b"cf:x"].value == b"a1x"
    client.scannerClose(sid)
    sid = client.scannerOpenWithStopTs(table.name, b"", b"a2", None, 201, {})
    assert client.scannerGetList(sid, 5)[0].columns[b"cf:x"].value == b"a1x-new"
    client.scannerClose(sid)
    sid = client.scannerOpen(table.name, b"c", None, {})
    assert [r.row for r in client.scannerGetList(sid, 5)] == [b"c1"]
    client.scannerClose(sid)


def test_closed_or_unknown_scanner_id_is_illegal_argument(
    table: happybase.Table, conn: happybase.Connection
) -> None:
    sid = conn.client.scannerOpen(table.name, b"", None, {})
    conn.client.scannerClose(sid)
    with pytest.raises(IllegalArgument) as err:
        conn.client.scannerGetList(sid, 1)
    assert err.value.message == b"scanner ID is invalid"
    with pytest.raises(IllegalArgument):
        conn.client.scannerClose(sid)
