"""The OpenLineage names of a pipeline's datasets: its Kafka topics and its HBase table.

Kafka follows OpenLineage's naming specification: namespace ``kafka://{host}:{port}`` of
the first bootstrap server, name = the topic. HBase has no entry in the specification; its
names follow the pattern the specification gives the other host-and-port data stores
(Cassandra ``cassandra://{host}:{port}`` + ``{keyspace}.{table}``, Hive, MySQL, HDFS):
namespace ``hbase://{host}:{port}`` of the connection's first Thrift server, name
``{namespace}:{table}``, HBase's own qualified table name, always with its namespace
(``default`` too, as HBase resolves a bare name) and after the connection's table prefix
(applied as happybase applies it). docs/lineage.md says why not the ZooKeeper quorum.

Pure functions of connection settings: no I/O, no OpenLineage import, and never a
credential in a name (only hosts, ports, topics and tables are read).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from airflow_provider_eo.assets import DEFAULT_NAMESPACE
from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs, kafka_client_config
from airflow_provider_eo.clients.connections import EoConnection

KAFKA_SCHEME = "kafka"
HBASE_SCHEME = "hbase"
#: librdkafka's port for a bootstrap server written without one.
DEFAULT_KAFKA_PORT = 9092
_PROTOCOL_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9_+.-]*://")


@dataclass(frozen=True)
class DatasetName:
    """One dataset as OpenLineage names it: the data source (``namespace``) and the dataset in it."""

    namespace: str
    name: str


def first_bootstrap_server(bootstrap_servers: str) -> tuple[str, int]:
    """Host and port of the first entry of a librdkafka ``bootstrap.servers`` list.

    Entries are separated by commas or spaces; each is ``[protocol://]host[:port]`` (IPv6 as
    ``[address]:port``); without a port, 9092 (librdkafka's default). Raises ``ValueError``
    naming the list or the entry when there is no entry or its port is not a port.
    """
    entries = bootstrap_servers.replace(",", " ").split()
    if not entries:
        raise ValueError(f"bootstrap.servers names no server: {bootstrap_servers!r}")
    entry = _PROTOCOL_PREFIX.sub("", entries[0])
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port_text = rest.removeprefix(":") if rest else ""
    elif entry.count(":") == 1:
        host, _, port_text = entry.partition(":")
    else:  # a bare IPv6 address has no room for a port
        host, port_text = entry, ""
    if not host or (port_text and not (port_text.isdigit() and 0 < int(port_text) < 65536)):
        raise ValueError(f"bootstrap.servers: bad first server {entries[0]!r} (expected host:port)")
    return host, int(port_text) if port_text else DEFAULT_KAFKA_PORT


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def kafka_namespace(bootstrap_servers: str) -> str:
    """``kafka://{host}:{port}`` of the first bootstrap server (:func:`first_bootstrap_server`)."""
    return f"{KAFKA_SCHEME}://{_authority(*first_bootstrap_server(bootstrap_servers))}"


def hbase_namespace(host: str, port: int) -> str:
    """``hbase://{host}:{port}`` of a Thrift server."""
    return f"{HBASE_SCHEME}://{_authority(host, port)}"


def hbase_table_name(table: str, table_prefix: str | None = None, separator: str = "_") -> str:
    """``{namespace}:{qualifier}`` of ``table`` (``[namespace:]name``) behind a connection with
    ``table_prefix``: the prefix goes first, as happybase writes it (``prefix_ns:name``)."""
    physical = f"{table_prefix}{separator}{table}" if table_prefix else table
    namespace, _, qualifier = physical.rpartition(":")
    return f"{namespace or DEFAULT_NAMESPACE}:{qualifier}"


def topic_datasets(kafka: EoConnection, topics: Iterable[str]) -> list[DatasetName]:
    """One dataset per topic (in the order given, each once) on the Kafka connection ``kafka``.

    Raises ``ValueError`` when the connection names no bootstrap server (the message names
    the connection, never its settings)."""
    namespace = kafka_namespace(kafka_client_config(kafka).config["bootstrap.servers"])
    return [DatasetName(namespace, topic) for topic in dict.fromkeys(topics)]


def table_dataset(hbase: EoConnection, table: str) -> DatasetName:
    """The dataset of ``table`` on the HBase connection ``hbase`` (its first Thrift server, its
    table prefix). Raises ``ValueError`` naming the connection for a bad Thrift server entry."""
    settings = hbase_connection_kwargs(hbase)
    return DatasetName(
        hbase_namespace(settings["host"], settings["port"]),
        hbase_table_name(table, settings["table_prefix"], settings["table_prefix_separator"]),
    )
