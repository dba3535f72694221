"""Table admin via happybase: create with family options, list, prefixes, enable/disable, delete, regions."""

from __future__ import annotations

import uuid

import happybase
import pytest
from Hbase_thrift import AlreadyExists, IllegalArgument, IOError

from tests.hbase_gateway.conftest import Gateway

DEFAULTS = {
    "max_versions": 3,
    "compression": b"NONE",
    "in_memory": False,
    "bloom_filter_type": b"NONE",
    "bloom_filter_vector_size": 0,
    "bloom_filter_nb_hashes": 0,
    "block_cache_enabled": False,
    "time_to_live": 2147483647,
}


def _name() -> str:
    return "adm_" + uuid.uuid4().hex[:10]


def test_families_returns_every_option_as_given(conn: happybase.Connection) -> None:
    name = _name()
    conn.create_table(
        name,
        {
            "a": {
                "max_versions": 7,
                "compression": "gz",
                "in_memory": True,
                "bloom_filter_type": "ROWCOL",
                "block_cache_enabled": True,
                "time_to_live": 3600,
            },
            "b": {},
        },
    )
    families = conn.table(name).families()
    assert families == {
        b"a": {
            "name": b"a:",
            "max_versions": 7,
            "compression": b"GZ",
            "in_memory": True,
            "bloom_filter_type": b"ROWCOL",
            "bloom_filter_vector_size": 0,
            "bloom_filter_nb_hashes": 0,
            "block_cache_enabled": True,
            "time_to_live": 3600,
        },
        b"b": {"name": b"b:", **DEFAULTS},
    }


def test_create_existing_table_raises_already_exists(conn: happybase.Connection) -> None:
    name = _name()
    conn.create_table(name, {"cf": {}})
    with pytest.raises(AlreadyExists) as err:
        conn.create_table(name, {"other": {}})
    assert err.value.message == b"table name already in use"
    assert list(conn.table(name).families()) == [b"cf"]


@pytest.mark.parametrize(
    ("families", "error", "fragment"),
    [
        ({"cf": {"max_versions": 0}}, IllegalArgument, b"Maximum versions must be positive"),
        ({"cf": {"compression": "nope"}}, IllegalArgument, b"Unsupported compression algorithm name: nope"),
        ({"cf": {"bloom_filter_type": "BAD"}}, IllegalArgument, b"BloomType.BAD"),
    ],
)
def test_invalid_family_options_are_rejected(
    conn: happybase.Connection, families: dict[str, dict[str, object]], error: type, fragment: bytes
) -> None:
    name = _name()
    with pytest.raises(error) as err:
        conn.create_table(name, families)
    assert fragment in err.value.message  # type: ignore[attr-defined]
    assert name.encode() not in conn.tables()


def test_invalid_table_name_is_illegal_argument(conn: happybase.Connection) -> None:
    with pytest.raises(IllegalArgument) as err:
        conn.create_table("bad name", {"cf": {}})
    assert b"Illegal table name" in err.value.message
    with pytest.raises(IOError) as io_err:
        conn.create_table("ns:t", {"cf": {}})
    assert io_err.value.message.startswith(b"org.apache.hadoop.hbase.NamespaceNotFoundException: ns")
    with pytest.raises(IOError) as io_err:
        conn.client.createTable(b"no_families", [])
    assert io_err.value.message == (
        b"org.apache.hadoop.hbase.DoNotRetryIOException: Table should have at least one column family."
    )


def test_tables_lists_in_byte_order_and_honours_prefix(gateway: Gateway) -> None:
    prefix = "p" + uuid.uuid4().hex[:8]
    plain = gateway.connect()
    prefixed = gateway.connect(table_prefix=prefix)
    for short in ("zeta", "Alpha", "mid"):
        prefixed.create_table(short, {"cf": {}})
    assert prefixed.tables() == [b"Alpha", b"mid", b"zeta"]
    names = plain.tables()
    assert [n for n in names if n.startswith(prefix.encode())] == [
        f"{prefix}_Alpha".encode(),
        f"{prefix}_mid".encode(),
        f"{prefix}_zeta".encode(),
    ]
    assert names == sorted(names)
    prefixed.table("mid").put(b"r", {b"cf:q": b"v"})
    assert plain.table(f"{prefix}_mid").row(b"r") == {b"cf:q": b"v"}
    plain.close()
    prefixed.close()


def test_disable_enable_and_delete(conn: happybase.Connection) -> None:
    name = _name()
    conn.create_table(name, {"cf": {}})
    assert conn.is_table_enabled(name) is True
    with pytest.raises(IOError) as err:
        conn.delete_table(name)
    assert err.value.message == f"org.apache.hadoop.hbase.TableNotDisabledException: {name}".encode()
    conn.disable_table(name)
    assert conn.is_table_enabled(name) is False
    with pytest.raises(IOError) as err:
        conn.disable_table(name)
    assert (
        err.value.message == f"org.apache.hadoop.hbase.TableNotEnabledException: {name} is disabled.".encode()
    )
    conn.enable_table(name)
    with pytest.raises(IOError) as err:
        conn.enable_table(name)
    assert err.value.message == f"org.apache.hadoop.hbase.TableNotDisabledException: {name}".encode()
    conn.table(name).put(b"r", {b"cf:q": b"v"})
    conn.delete_table(name, disable=True)
    assert name.encode() not in conn.tables()
    conn.create_table(name, {"cf": {}})
    assert conn.table(name).row(b"r") == {}


def test_delete_unknown_table(conn: happybase.Connection) -> None:
    with pytest.raises(IOError) as err:
        conn.client.deleteTable(b"no_such_table_x")
    assert err.value.message == b"java.io.IOException: table does not exist"


def test_regions_describe_one_region_covering_the_table(gateway: Gateway, conn: happybase.Connection) -> None:
    name = _name()
    conn.create_table(name, {"cf": {}})
    (region,) = conn.table(name).regions()
    assert region["start_key"] == b""
    assert region["end_key"] == b""
    assert region["name"].startswith(name.encode() + b",,")
    assert region["version"] == 1
    assert region["server_name"] == gateway.host.encode()
    assert region["port"] == gateway.port
    assert conn.client.getTableRegions(b"no_such_table_x") == []


def test_compaction_is_accepted_and_changes_nothing(conn: happybase.Connection) -> None:
    name = _name()
    conn.create_table(name, {"cf": {"max_versions": 2}})
    table = conn.table(name)
    for ts in (1, 2, 3):
        table.put(b"r", {b"cf:q": b"v%d" % ts}, timestamp=ts)
    conn.compact_table(name)
    conn.compact_table(name, major=True)
    assert table.cells(b"r", b"cf:q", include_timestamp=True) == [(b"v3", 3), (b"v2", 2)]
    with pytest.raises(IOError) as err:
        conn.compact_table("no_such_table_x")
    assert err.value.message == b"org.apache.hadoop.hbase.TableNotFoundException: no_such_table_x"
