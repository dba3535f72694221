"""Turn an :class:`EoConnection` into client settings (librdkafka, libpq, happybase).

Airflow-free, so the Spark application builds its clients exactly as the hooks do.
Returned values can hold secrets (passwords, SASL credentials): never log them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.clients.hbase_security import hbase_security
from airflow_provider_eo.clients.kafka_client_features import check_client_features

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
    "gssencmode",
    "krbsrvname",
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
    Raises ``ValueError`` when no bootstrap server is known, and
    :class:`~airflow_provider_eo.clients.kafka_client_features.KafkaFeatureMissing` when the
    installed librdkafka lacks a feature the settings need (GSSAPI without libsasl2, ...).
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
    check_client_features(conn.conn_id, config)
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


#: ``extra`` key (and UI form field ``extra__eo_hbase__servers``) listing every Thrift server.
HBASE_SERVERS_KEY = "servers"

#: One Thrift server: (host, port).
Endpoint = tuple[str, int]


def _hbase_extra(conn: EoConnection) -> dict[str, Any]:
    """``extra`` with UI form field keys (``extra__eo_hbase__<name>``) folded in, empty values dropped."""
    return {k.removeprefix("extra__eo_hbase__"): v for k, v in conn.extra.items() if v not in (None, "")}


def parse_endpoint(conn_id: str, entry: object) -> Endpoint:
    """``host:port`` (``[v6-address]:port`` for IPv6; ``host`` alone means port 9090).

    Raises ``ValueError`` naming the connection and the entry when it is not one.
    """
    bad = f"HBase connection {conn_id!r}: bad Thrift server {entry!r} in extra.servers"
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError(f"{bad}: expected 'host:port'")
    text = entry.strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":") if sep and rest.startswith(":") else None
        if not sep or (rest and port_text is None):
            raise ValueError(f"{bad}: expected '[address]:port'")
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = text, None
        elif ":" in host:
            raise ValueError(f"{bad}: write an IPv6 address as '[address]:port'")
    if not host:
        raise ValueError(f"{bad}: no host")
    if port_text is None:
        return host, DEFAULT_HBASE_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"{bad}: port must be a number from 1 to 65535")
    return host, int(port_text)


def _looks_like_json_list(text: str) -> bool:
    """``["...`` or ``[]`` (not ``[::1]:9090``, an IPv6 entry)."""
    text = text.strip()
    return text.startswith("[") and text[1:].lstrip()[:1] in ('"', "]", "")


def hbase_endpoints(conn: EoConnection) -> tuple[Endpoint, ...]:
    """Every Thrift server of the HBase connection, in order, without duplicates.

    The first is host/port (defaults ``localhost``, 9090); then the entries of
    ``extra.servers`` that are not already listed. ``servers`` is ``"host:port,host:port"``
    (comma- or whitespace-separated), a JSON list of such strings, or such a list stored
    as JSON in ``extra``. Without host, the first entry of ``servers`` comes first.
    Raises ``ValueError`` naming the connection and the bad entry (:func:`parse_endpoint`),
    or when ``servers`` is neither a string nor a list of strings.
    """
    raw = _hbase_extra(conn).get(HBASE_SERVERS_KEY)
    if isinstance(raw, str) and _looks_like_json_list(raw):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"HBase connection {conn.conn_id!r}: extra.servers is not valid JSON: {exc}"
            ) from None
    if raw is None:
        entries: Sequence[object] = ()
    elif isinstance(raw, str):
        entries = raw.replace(",", " ").split()
    elif isinstance(raw, list):
        entries = list(raw)
    else:
        raise ValueError(
            f"HBase connection {conn.conn_id!r}: extra.servers must be 'host:port,host:port' or a "
            f"JSON list of 'host:port' strings, not {type(raw).__name__}"
        )
    servers = [parse_endpoint(conn.conn_id, entry) for entry in entries]
    if conn.host or not servers:
        servers.insert(0, (conn.host or "localhost", int(conn.port or DEFAULT_HBASE_PORT)))
    return tuple(dict.fromkeys(servers))


def hbase_connection_kwargs(conn: EoConnection) -> dict[str, Any]:
    """Keyword arguments for ``happybase.Connection`` (and ``ConnectionPool``).

    ``host``/``port``: the first Thrift server of :func:`hbase_endpoints` (by default
    host/port, else ``localhost``:9090); ``extra``: ``servers`` (every Thrift server, see
    :func:`hbase_endpoints`; validated here, used by the Spark writer to spread tasks and
    fail over), ``transport`` (buffered|framed|http, default buffered; http is
    Thrift over HTTP, HTTPS with ``ssl``), ``protocol``
    (binary|compact, default binary), ``table_prefix``, ``table_prefix_separator``
    (default ``_``), ``timeout_ms`` (socket timeout, default none), ``compat`` (default
    0.98); the security keys (``auth``, ``kerberos_*``, ``krb5_conf``, ``sasl_qop``, ``ssl``,
    ``ssl_ca``: :mod:`.hbase_security`) add ``security`` (a dict, when not the default), which
    ``clients.hbase_thrift.EoThriftConnection`` takes. UI form fields stored as
    ``extra__eo_hbase__<name>`` are accepted too.
    """
    extra = _hbase_extra(conn)
    transport = str(extra.get("transport", "buffered"))
    protocol = str(extra.get("protocol", "binary"))
    if transport not in ("buffered", "framed", "http"):
        raise ValueError(f"HBase connection {conn.conn_id!r}: transport must be buffered, framed or http")
    if protocol not in ("binary", "compact"):
        raise ValueError(f"HBase connection {conn.conn_id!r}: protocol must be binary or compact")
    timeout = extra.get("timeout_ms")
    host, port = hbase_endpoints(conn)[0]
    security = hbase_security(conn.conn_id, extra, transport)
    kwargs = {
        "host": host,
        "port": port,
        "timeout": int(timeout) if timeout not in (None, "") else None,
        "transport": transport,
        "protocol": protocol,
        "table_prefix": extra.get("table_prefix") or None,
        "table_prefix_separator": str(extra.get("table_prefix_separator", "_")),
        "compat": str(extra.get("compat", "0.98")),
    }
    if not security.is_default:
        kwargs["security"] = security.to_dict()
    return kwargs
