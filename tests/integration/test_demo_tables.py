"""The demo's tables (eo_devtools.demo.tables) on real HBase, read back through HBase's Java
Admin API: a new table's family takes tombstones the README's way (KEEP_DELETED_CELLS TRUE);
an existing table is left exactly as it was, and the demo says so."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import happybase
import pytest

from eo_devtools.demo.tables import ensure_table
from eo_devtools.stack.hbase_admin import HBaseTableTool
from tests.conftest import StackInfo

pytestmark = pytest.mark.integration


@pytest.fixture
def hbase(stack: StackInfo) -> Iterator[happybase.Connection]:
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    yield connection
    connection.close()


@pytest.fixture
def table_name(hbase: happybase.Connection) -> Iterator[str]:
    name = f"demo_tables_{uuid.uuid4().hex[:8]}"
    yield name
    if name.encode() in hbase.tables():
        hbase.delete_table(name, disable=True)


def test_new_table_keeps_deleted_cells_and_an_existing_one_is_left_as_it_is(
    stack: StackInfo, hbase: happybase.Connection, table_name: str
) -> None:
    tool = HBaseTableTool(stack.state_dir)

    first = ensure_table(tool, hbase, table_name, "d", takes_tombstones=True)
    assert first.created
    settings = {"versions": "3", "ttl": "2147483647", "keep_deleted_cells": "TRUE"}
    assert first.settings == settings  # read by the creating JVM itself
    assert tool.describe(table_name) == {"d": settings}
    assert first.describe() == f"created HBase table {table_name} (family d: KEEP_DELETED_CELLS TRUE)"

    again = ensure_table(tool, hbase, table_name, "d", takes_tombstones=True)
    assert not again.created
    assert (
        again.describe()
        == f"HBase table {table_name} exists: left as it is (family d: KEEP_DELETED_CELLS TRUE)"
    )


def test_an_existing_table_with_default_settings_is_not_altered(
    stack: StackInfo, hbase: happybase.Connection, table_name: str
) -> None:
    tool = HBaseTableTool(stack.state_dir)
    hbase.create_table(table_name, {"d": {}})  # what the demo did before: Thrift1, HBase's defaults

    outcome = ensure_table(tool, hbase, table_name, "d", takes_tombstones=True)

    assert not outcome.created
    assert tool.describe(table_name) == {
        "d": {"versions": "3", "ttl": "2147483647", "keep_deleted_cells": "FALSE"}
    }
    assert outcome.describe() == (
        f"HBase table {table_name} exists: left as it is (family d: KEEP_DELETED_CELLS FALSE); the README "
        f"advises TRUE for families that take tombstones: in the HBase shell alter '{table_name}', "
        "{NAME => 'd', KEEP_DELETED_CELLS => 'TRUE'}"
    )
