"""Airflow provider entry point (``apache_airflow_provider``).

Keep this a literal dict: every part of the package adds its own entries (connection
types, hooks, operators, plugins). ``tests/unit/test_provider_info.py`` validates it
against Airflow's ``provider_info.schema.json`` and imports everything it names.
"""

from __future__ import annotations

from typing import Any

INTEGRATION = "Exactly-once Kafka to HBase"


def get_provider_info() -> dict[str, Any]:
    """Describe this provider to Airflow's ProvidersManager."""
    return {
        "package-name": "airflow-provider-eo",
        "name": "Exactly-once Kafka to HBase (eo)",
        "description": "Checkpointed, exactly-once Kafka -> HBase epochs coordinated by Airflow.",
        "versions": ["0.1.0"],
        "integrations": [{"integration-name": INTEGRATION, "tags": ["apache", "service"]}],
        "connection-types": [
            {
                "connection-type": "eo_kafka",
                "hook-class-name": "airflow_provider_eo.hooks.kafka.EoKafkaHook",
                "hook-name": "EO Kafka (librdkafka settings)",
                "ui-field-behaviour": {
                    "hidden-fields": ["host", "port", "schema", "login", "password"],
                    "relabeling": {"extra": "Config Dict (librdkafka settings, JSON)"},
                    "placeholders": {
                        "extra": '{"bootstrap.servers": "broker1:9092,broker2:9092", '
                        '"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", '
                        '"sasl.username": "...", "sasl.password": "...", "eo.timeout.ms": 15000}',
                    },
                },
            },
            {
                "connection-type": "eo_hbase",
                "hook-class-name": "airflow_provider_eo.hooks.hbase.EoHBaseHook",
                "hook-name": "EO HBase (Thrift1)",
                "ui-field-behaviour": {
                    "hidden-fields": ["schema", "login", "password"],
                    "relabeling": {"host": "Thrift server host", "port": "Thrift server port"},
                    "placeholders": {
                        "host": "hbase-thrift.example.com",
                        "port": "9090",
                        "extra": '{"transport": "buffered", "protocol": "binary", "table_prefix": null, '
                        '"timeout_ms": 30000}',
                    },
                },
                "conn-fields": {
                    "transport": {
                        "label": "Transport",
                        "description": "Thrift transport: buffered, framed or http (HTTPS with ssl)",
                        "schema": {"type": ["string", "null"], "enum": ["buffered", "framed", "http", None]},
                    },
                    "protocol": {
                        "label": "Protocol",
                        "description": "Thrift protocol of the server: binary or compact",
                        "schema": {"type": ["string", "null"], "enum": ["binary", "compact", None]},
                    },
                    "table_prefix": {
                        "label": "Table prefix",
                        "description": "Prefix of every table name (happybase table_prefix)",
                        "schema": {"type": ["string", "null"]},
                    },
                    "timeout_ms": {
                        "label": "Timeout (ms)",
                        "description": "Socket timeout of Thrift calls",
                        "schema": {"type": ["integer", "null"]},
                    },
                    "servers": {
                        "label": "Thrift servers",
                        "description": "Every Thrift server, host:port,host:port (host/port is the first); "
                        "Spark write tasks spread over them and fail over to the next one",
                        "schema": {"type": ["string", "null"]},
                    },
                },
            },
            {
                "connection-type": "eo_schema_registry",
                "hook-class-name": "airflow_provider_eo.hooks.schema_registry.EoSchemaRegistryHook",
                "hook-name": "EO Schema Registry (Confluent-compatible API)",
                "ui-field-behaviour": {
                    "hidden-fields": [],
                    "relabeling": {"schema": "Path (or http/https)", "login": "Basic auth user"},
                    "placeholders": {
                        "host": "registry.example.com",
                        "port": "8081",
                        "schema": "apis/ccompat/v7",
                        "login": "registry-user",
                        "extra": '{"ssl.ca.location": "/etc/ssl/registry-ca.pem", '
                        '"ssl.certificate.location": "/etc/ssl/client.pem", '
                        '"ssl.key.location": "/etc/ssl/client.key", "timeout": 10}',
                    },
                },
            },
            {
                "connection-type": "eo_ledger",
                "hook-class-name": "airflow_provider_eo.hooks.ledger.EoLedgerHook",
                "hook-name": "EO Epoch Ledger (PostgreSQL)",
                "ui-field-behaviour": {
                    "hidden-fields": [],
                    "relabeling": {"schema": "Database"},
                    "placeholders": {
                        "host": "postgres.example.com",
                        "port": "5432",
                        "schema": "eo",
                        "login": "eo",
                        "extra": '{"sslmode": "require", "connect_timeout": 10}',
                    },
                },
            },
        ],
        "hooks": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_eo.hooks.kafka",
                    "airflow_provider_eo.hooks.hbase",
                    "airflow_provider_eo.hooks.ledger",
                    "airflow_provider_eo.hooks.schema_registry",
                ],
            }
        ],
        "operators": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_eo.operators.write",
                    "airflow_provider_eo.operators.session_write_operator",
                    "airflow_provider_eo.operators.reserve",
                    "airflow_provider_eo.operators.backfill",
                    "airflow_provider_eo.operators.commit",
                    "airflow_provider_eo.operators.recover",
                    "airflow_provider_eo.operators.release",
                    "airflow_provider_eo.operators.wait",
                ],
            }
        ],
        "triggers": [
            {
                "integration-name": INTEGRATION,
                "python-modules": ["airflow_provider_eo.triggers.records_available"],
            }
        ],
        "plugins": [
            {"name": "eo", "plugin-class": "airflow_provider_eo.plugins.epochs.EpochLedgerPlugin"},
        ],
        # Committed epochs are events of their table's Asset: hbase://<hbase_conn_id>/<ns>/<table>
        "asset-uris": [{"schemes": ["hbase"], "handler": "airflow_provider_eo.assets.sanitize_uri"}],
    }
