"""OpenLineage dataset names (airflow_provider_eo.lineage.dataset_names): Kafka by OpenLineage's
naming spec, HBase by the host:port pattern, from every form a connection takes; no service."""

from __future__ import annotations

import pytest

from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.lineage.dataset_names import (
    DatasetName,
    first_bootstrap_server,
    hbase_table_name,
    kafka_namespace,
    table_dataset,
    topic_datasets,
)


@pytest.mark.parametrize(
    ("bootstrap", "namespace"),
    [
        ("b1:9092", "kafka://b1:9092"),
        ("b1:9092,b2:9093", "kafka://b1:9092"),
        ("  b1.example.com:19092 , b2:9092 ", "kafka://b1.example.com:19092"),
        ("b1:9092 b2:9092", "kafka://b1:9092"),  # librdkafka also takes spaces
        ("b1", "kafka://b1:9092"),  # librdkafka's default port
        (
            "SASL_SSL://broker-1.example.com:9093,SASL_SSL://broker-2.example.com:9093",
            "kafka://broker-1.example.com:9093",
        ),
        ("PLAINTEXT://127.0.0.1:29092", "kafka://127.0.0.1:29092"),
        ("[::1]:9094,b2:9092", "kafka://[::1]:9094"),
        ("[fe80::1]", "kafka://[fe80::1]:9092"),
        ("::1", "kafka://[::1]:9092"),
    ],
)
def test_kafka_namespace_is_the_first_bootstrap_server(bootstrap: str, namespace: str) -> None:
    assert kafka_namespace(bootstrap) == namespace


@pytest.mark.parametrize(
    ("bootstrap", "message"),
    [
        ("", "bootstrap.servers names no server: ''"),
        (" , ", "bootstrap.servers names no server: ' , '"),
        ("b1:http", "bootstrap.servers: bad first server 'b1:http' (expected host:port)"),
        ("b1:0,b2:9092", "bootstrap.servers: bad first server 'b1:0' (expected host:port)"),
        ("b1:70000", "bootstrap.servers: bad first server 'b1:70000' (expected host:port)"),
        (":9092", "bootstrap.servers: bad first server ':9092' (expected host:port)"),
    ],
)
def test_a_bootstrap_list_without_a_usable_first_server_is_refused(bootstrap: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        first_bootstrap_server(bootstrap)
    assert str(raised.value) == message


def test_topics_of_a_sasl_ssl_connection_are_named_without_its_settings() -> None:
    kafka = EoConnection(
        conn_id="eo_kafka",
        conn_type="kafka",
        extra={
            "bootstrap.servers": "SASL_SSL://b1.example.com:9093,b2.example.com:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "eo",
            "sasl.password": "pa55-w0rd",
            "eo.timeout.ms": 5000,
        },
    )
    named = topic_datasets(kafka, ["orders", "refunds", "orders"])
    assert named == [
        DatasetName("kafka://b1.example.com:9093", "orders"),
        DatasetName("kafka://b1.example.com:9093", "refunds"),
    ]


def test_a_kafka_connection_with_host_and_port_only_names_that_server() -> None:
    kafka = EoConnection(conn_id="k", conn_type="kafka", host="broker", port=9095)
    assert topic_datasets(kafka, ["t"]) == [DatasetName("kafka://broker:9095", "t")]
    with pytest.raises(ValueError, match=r"Kafka connection 'bare': set 'bootstrap\.servers'"):
        topic_datasets(EoConnection(conn_id="bare", conn_type="kafka"), ["t"])


@pytest.mark.parametrize(
    ("table", "prefix", "separator", "name"),
    [
        ("orders", None, "_", "default:orders"),
        ("default:orders", None, "_", "default:orders"),
        ("analytics:orders", None, "_", "analytics:orders"),
        ("orders", "staging", "_", "default:staging_orders"),
        ("analytics:orders", "staging", "_", "staging_analytics:orders"),  # happybase's spelling
        ("orders", "env", ".", "default:env.orders"),
    ],
)
def test_hbase_table_names_are_namespace_qualified_after_the_prefix(
    table: str, prefix: str | None, separator: str, name: str
) -> None:
    assert hbase_table_name(table, prefix, separator) == name


@pytest.mark.parametrize(
    ("connection", "namespace", "name"),
    [
        (EoConnection(conn_id="h", host="thrift-1", port=9090), "hbase://thrift-1:9090", "default:orders"),
        (EoConnection(conn_id="h", host="thrift-1"), "hbase://thrift-1:9090", "default:orders"),
        (
            EoConnection(
                conn_id="h",
                host="thrift-1",
                port=9091,
                extra={"servers": "thrift-2:9090,thrift-3:9090", "table_prefix": "prod"},
            ),
            "hbase://thrift-1:9091",
            "default:prod_orders",
        ),
        (  # no host: the first of servers, a JSON list here
            EoConnection(conn_id="h", extra={"servers": '["thrift-2:9092", "thrift-3:9090"]'}),
            "hbase://thrift-2:9092",
            "default:orders",
        ),
        (  # the UI form's field names, a separator of its own
            EoConnection(
                conn_id="h",
                host="::1",
                port=9090,
                extra={"extra__eo_hbase__table_prefix": "t", "table_prefix_separator": "-"},
            ),
            "hbase://[::1]:9090",
            "default:t-orders",
        ),
    ],
)
def test_the_table_dataset_is_on_the_first_thrift_server(
    connection: EoConnection, namespace: str, name: str
) -> None:
    assert table_dataset(connection, "orders") == DatasetName(namespace, name)


def test_a_bad_thrift_server_entry_is_refused_naming_the_connection() -> None:
    bad = EoConnection(conn_id="eo_hbase", extra={"servers": "thrift-1:http"})
    with pytest.raises(ValueError, match="HBase connection 'eo_hbase': bad Thrift server 'thrift-1:http'"):
        table_dataset(bad, "orders")
