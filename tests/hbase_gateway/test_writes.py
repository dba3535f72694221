"""Writes through happybase: put, batch (batch_size, transaction, timestamp, wal), overwrite rules."""

from __future__ import annotations

from collections.abc import Callable

import happybase
import pytest
from Hbase_thrift import BatchMutation, IllegalArgument, IOError, Mutation

Factory = Callable[..., happybase.Table]


def test_put_then_row_returns_every_column(make_table: Factory) -> None:
    table = make_table(cf={}, cg={})
    table.put(b"r1", {b"cf:a": b"1", b"cf:b": b"", b"cg:c": b"\x00\xff"})
    assert table.row(b"r1") == {b"cf:a": b"1", b"cf:b": b"", b"cg:c": b"\x00\xff"}


def test_put_with_timestamp_stores_that_version(make_table: Factory) -> None:
    table = make_table()
    table.put(b"r", {b"cf:a": b"old"}, timestamp=100)
    table.put(b"r", {b"cf:a": b"new"}, timestamp=200)
    table.put(b"r", {b"cf:a": b"older"}, timestamp=50)
    assert table.row(b"r", include_timestamp=True) == {b"cf:a": (b"new", 200)}
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [
        (b"new", 200),
        (b"old", 100),
        (b"older", 50),
    ]


def test_put_at_same_timestamp_overwrites_that_version(make_table: Factory) -> None:
    table = make_table()
    table.put(b"r", {b"cf:a": b"first"}, timestamp=7)
    table.put(b"r", {b"cf:a": b"second"}, timestamp=7)
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"second", 7)]


def test_put_without_timestamp_uses_server_clock_in_ms(make_table: Factory) -> None:
    table = make_table()
    table.put(b"r", {b"cf:a": b"v"}, timestamp=5)
    table.put(b"r", {b"cf:a": b"w"})
    (latest, older) = table.cells(b"r", b"cf:a", include_timestamp=True)
    assert latest[0] == b"w"
    assert latest[1] > 1_600_000_000_000
    assert older == (b"v", 5)


def test_batch_sends_all_rows_with_batch_timestamp_and_wal_flag(make_table: Factory) -> None:
    table = make_table()
    with table.batch(timestamp=42, wal=False) as batch:
        for i in range(250):
            batch.put(b"row%03d" % i, {b"cf:n": b"%d" % i, b"cf:m": b"x"})
    rows = list(table.scan(include_timestamp=True))
    assert len(rows) == 250
    assert rows[7] == (b"row007", {b"cf:n": (b"7", 42), b"cf:m": (b"x", 42)})


def test_batch_size_flushes_in_chunks(make_table: Factory) -> None:
    table = make_table()
    batch = table.batch(batch_size=10)
    for i in range(25):
        batch.put(b"r%02d" % i, {b"cf:q": b"v"})
    assert len(list(table.scan())) == 20
    batch.send()
    assert len(list(table.scan())) == 25


def test_transaction_batch_is_not_sent_when_block_raises(make_table: Factory) -> None:
    table = make_table()
    with pytest.raises(ValueError), table.batch(transaction=True) as batch:
        batch.put(b"r1", {b"cf:q": b"v"})
        raise ValueError("abort")
    assert table.row(b"r1") == {}
    with table.batch(transaction=True) as batch:
        batch.put(b"r1", {b"cf:q": b"v"})
    assert table.row(b"r1") == {b"cf:q": b"v"}


def test_last_put_of_a_column_in_one_call_wins(make_table: Factory, conn: happybase.Connection) -> None:
    table = make_table()
    mutations = [Mutation(column=b"cf:q", value=b"1"), Mutation(column=b"cf:q", value=b"2")]
    conn.client.mutateRowsTs(table.name, [BatchMutation(row=b"r", mutations=mutations)], 9, {})
    assert table.cells(b"r", b"cf:q", include_timestamp=True) == [(b"2", 9)]


def test_put_without_qualifier_is_illegal_in_mutate_rows(
    make_table: Factory, conn: happybase.Connection
) -> None:
    table = make_table()
    with pytest.raises(IllegalArgument) as err:
        conn.client.mutateRows(
            table.name, [BatchMutation(row=b"r", mutations=[Mutation(column=b"cf", value=b"v")])], {}
        )
    assert err.value.message == b"java.lang.IllegalArgumentException: Invalid famAndQf provided."
    conn.client.mutateRow(
        table.name, b"r", [Mutation(column=b"cf", value=b"v"), Mutation(column=b"cf:q", value=b"w")], {}
    )
    assert table.row(b"r") == {b"cf:q": b"w"}


def test_empty_qualifier_is_a_column_of_its_own(make_table: Factory) -> None:
    table = make_table()
    table.put(b"r", {b"cf:": b"empty", b"cf:q": b"named"})
    assert table.row(b"r") == {b"cf:": b"empty", b"cf:q": b"named"}
    assert table.row(b"r", columns=[b"cf:"]) == {b"cf:": b"empty"}


def test_failed_call_writes_nothing(make_table: Factory, conn: happybase.Connection) -> None:
    table = make_table()
    good = BatchMutation(row=b"a", mutations=[Mutation(column=b"cf:q", value=b"v")])
    bad = BatchMutation(row=b"b", mutations=[Mutation(column=b"nope:q", value=b"v")])
    with pytest.raises(IOError) as err:
        conn.client.mutateRows(table.name, [good, bad], {})
    assert b"NoSuchColumnFamilyException" in err.value.message
    assert list(table.scan()) == []


def test_negative_timestamp_and_empty_row_are_illegal(make_table: Factory) -> None:
    table = make_table()
    with pytest.raises(IllegalArgument) as err:
        table.put(b"r", {b"cf:q": b"v"}, timestamp=-1)
    assert b"Timestamp cannot be negative" in err.value.message
    with pytest.raises(IllegalArgument) as err:
        table.put(b"", {b"cf:q": b"v"})
    assert err.value.message == b"java.lang.IllegalArgumentException: Row length is 0"
