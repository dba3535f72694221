"""Errors HBase's Thrift gateway raises: unknown table, unknown family, disabled table, per call kind."""

from __future__ import annotations

from collections.abc import Callable

import happybase
import pytest
from Hbase_thrift import IOError

Factory = Callable[..., happybase.Table]

CALLS: dict[str, Callable[[happybase.Table], object]] = {
    "row": lambda t: t.row(b"r"),
    "rows": lambda t: t.rows([b"r"]),
    "cells": lambda t: t.cells(b"r", b"cf:q"),
    "scan": lambda t: list(t.scan()),
    "put": lambda t: t.put(b"r", {b"cf:q": b"v"}),
    "delete": lambda t: t.delete(b"r", columns=[b"cf"]),
    "counter": lambda t: t.counter_inc(b"r", b"cf:q"),
    "families": lambda t: t.families(),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_unknown_table(conn: happybase.Connection, call: str) -> None:
    with pytest.raises(IOError) as err:
        CALLS[call](conn.table("no_such_table"))
    assert err.value.message == b"org.apache.hadoop.hbase.TableNotFoundException: no_such_table"


@pytest.mark.parametrize("call", sorted(set(CALLS) - {"families"}))
def test_disabled_table(conn: happybase.Connection, make_table: Factory, call: str) -> None:
    table = make_table()
    conn.disable_table(table.name)
    with pytest.raises(IOError) as err:
        CALLS[call](table)
    assert (
        err.value.message
        == b"org.apache.hadoop.hbase.TableNotEnabledException: " + table.name + b" is disabled."
    )
    assert list(table.families()) == [b"cf"]
    conn.enable_table(table.name)
    CALLS[call](table)


@pytest.mark.parametrize(
    "write",
    [
        lambda t: t.put(b"r", {b"nope:q": b"v"}),
        lambda t: t.delete(b"r", columns=[b"nope"]),
        lambda t: t.counter_inc(b"r", b"nope:q"),
        lambda t: t.row(b"r", columns=[b"nope"]),
    ],
)
def test_unknown_family(make_table: Factory, write: Callable[[happybase.Table], object]) -> None:
    table = make_table()
    with pytest.raises(IOError) as err:
        write(table)
    assert err.value.message == (
        b"org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: "
        b"Column family nope does not exist in region " + table.name + b",,1 in table '" + table.name + b"'"
    )


def test_is_table_enabled_and_enable_of_unknown_table(conn: happybase.Connection) -> None:
    for call in (conn.is_table_enabled, conn.enable_table, conn.disable_table):
        with pytest.raises(IOError) as err:
            call("no_such_table")
        assert err.value.message == b"org.apache.hadoop.hbase.TableNotFoundException: no_such_table"


def test_calls_happybase_never_makes_fail_clearly(conn: happybase.Connection, make_table: Factory) -> None:
    table = make_table()
    with pytest.raises(IOError) as err:
        conn.client.getRowOrBefore(table.name, b"r", b"cf")
    assert b"getRowOrBefore is not supported by the local gateway" in err.value.message
