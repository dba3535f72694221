"""Turn an :class:`EoConnection` into client settings (librdkafka, libpq, happybase).

Airflow-free, so the Spark application builds its clients exactly as the hooks do.
Returned values can hold secrets (passwords, SASL credentials): never log them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_provider_eo.hooks.connections import EoConnection

#: Keys in the Kafka connection's ``extra`` that are ours, not librdkafka's (stripped before use).
KAFKA_TIMEOUT_KEY = "eo.timeout.ms"
DEFAULT_KAFKA_TIMEOUT_MS = 15_000

#: librdkafka defaults of ours, used unless the connection sets them. A new client drops its
#: bootstrap connection once the first metadata names the brokers, then connects to the
#: named broker only after half of ``reconnect.backoff.ms`` (librdkafka 2.x): 50 ms of
#: every short-lived client's start with the default of 100. Failed reconnects still back
#: off exponentially up to ``reconnect.backoff.max.ms`` (10 s).
KAFKA_CLIENT_DEFAULTS = {"reconnect.backoff.ms": "10"}

#: libpq keywords accepted from the Postgres connection's ``extra`` (others are ignored).
LIBPQ_EXTRA_KEYS = (
    "sslmode",
    "sslcert",
    "sslkey",
    "sslrootcert",
    "sslcrl",
    "sslpassword",
    "connect_timeout",
    "application_name",
    "options",
    "target_session_attrs",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
)

DEFAULT_HBASE_PORT = 9090


@dataclass(frozen=True)
class KafkaClientConfig:
    """librdkafka settings (``config``) plus our per-call timeout in seconds."""

    config: dict[str, str]
    timeout_s: float


def kafka_client_config(conn: EoConnection) -> KafkaClientConfig:
    """librdkafka config from a connection shaped like the official Kafka provider's.

    ``extra`` holds librdkafka settings (``bootstrap.servers``, ``security.protocol``,
    ``sasl.*``, ``ssl.*`` ...), all passed through unchanged, over
    :data:`KAFKA_CLIENT_DEFAULTS`. When ``bootstrap.servers`` is missing, ``host[:port]``
    is used. ``eo.timeout.ms`` (default 15000) bounds each metadata/offset call and is
    not passed to librdkafka.
    Raises ``ValueError`` when no bootstrap server is known.
    """
    extra = dict(conn.extra)
    timeout_ms = float(extra.pop(KAFKA_TIMEOUT_KEY, DEFAULT_KAFKA_TIMEOUT_MS))
    config = dict(KAFKA_CLIENT_DEFAULTS)
    config.update({str(k): str(v) if not isinstance(v, bool) else str(v).lower() for k, v in extra.items()})
    if not config.get("bootstrap.servers"):
        if not conn.host:
            raise ValueError(
                f"Kafka connection {conn.conn_id!r}: set 'bootstrap.servers' in extra (or host/port)"
            )
        config["bootstrap.servers"] = f"{conn.host}:{conn.port}" if conn.port else conn.host
    return KafkaClientConfig(config=config, timeout_s=timeout_ms / 1000.0)


def postgres_dsn(conn: EoConnection) -> str:
    """libpq DSN (keyword form, properly quoted) for the ledger database.

    host/port/login/password/schema (= database name) plus the libpq keywords of
    ``LIBPQ_EXTRA_KEYS`` found in ``extra``. The DSN contains the password: never log it.
    """
    from psycopg2.extensions import make_dsn

    params: dict[str, Any] = {
        "host": conn.host,
        "port": conn.port,
        "dbname": conn.schema,
        "user": conn.login,
        "password": conn.password,
    }
    params.update({k: conn.extra[k] for k in LIBPQ_EXTRA_KEYS if k in conn.extra})
    return str(make_dsn(**{k: v for k, v in params.items() if v not in (None, "")}))


def hbase_connection_kwargs(conn: EoConnection) -> dict[str, Any]:
    """Keyword arguments for ``happybase.Connection`` (and ``ConnectionPool``).

    ``host`` (default localhost), ``port`` (default 9090); ``extra``: ``transport``
    (buffered|framed, default buffered), ``protocol`` (binary|compact, default binary),
    ``table_prefix``, ``table_prefix_separator`` (default ``_``), ``timeout_ms``
    (socket timeout, default none), ``compat`` (default 0.98). UI form fields stored as
    ``extra__eo_hbase__<name>`` are accepted too.
    """
    extra = {k.removeprefix("extra__eo_hbase__"): v for k, v in conn.extra.items() if v not in (None, "")}
    transport = str(extra.get("transport", "buffered"))
    protocol = str(extra.get("protocol", "binary"))
    if transport not in ("buffered", "framed"):
        raise ValueError(f"HBase connection {conn.conn_id!r}: transport must be buffered or framed")
    if protocol not in ("binary", "compact"):
        raise ValueError(f"HBase connection {conn.conn_id!r}: protocol must be binary or compact")
    timeout = extra.get("timeout_ms")
    return {
        "host": conn.host or "localhost",
        "port": int(conn.port or DEFAULT_HBASE_PORT),
        "timeout": int(timeout) if timeout not in (None, "") else None,
        "transport": transport,
        "protocol": protocol,
        "table_prefix": extra.get("table_prefix") or None,
        "table_prefix_separator": str(extra.get("table_prefix_separator", "_")),
        "compat": str(extra.get("compat", "0.98")),
    }
