"""Resolve connections inside Airflow and outside it (the Spark application).

One small typed value, :class:`EoConnection`, is produced either from Airflow's own
lookup (``BaseHook.get_connection``: environment variables, secrets backends, the
metadata store through the API server) or, outside Airflow, from an
``AIRFLOW_CONN_<ID>`` environment variable in Airflow's URI or JSON form. Both paths
give identical values for the same definition, so the Spark application and the
Airflow tasks use the same connection definitions.

This module imports nothing from Airflow at module level (the Spark side may not
have Airflow installed). Nothing here logs a connection: values may carry secrets.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from airflow_provider_eo.errors import ConfigError

EXTRA_QUERY_KEY = "__extra__"

#: The connection ids every operator, the write application, the CLI and the UI use
#: unless told otherwise.
DEFAULT_LEDGER_CONN_ID = "eo_ledger"
DEFAULT_KAFKA_CONN_ID = "eo_kafka"
DEFAULT_HBASE_CONN_ID = "eo_hbase"
DEFAULT_SPARK_CONN_ID = "spark_default"
#: Needed only by pipelines whose key or value format is avro, protobuf or json_schema.
DEFAULT_SCHEMA_REGISTRY_CONN_ID = "schema_registry"


class ConnectionNotFound(ConfigError, LookupError):
    """No definition exists for the connection id (message names the id, never a value)."""


@dataclass(frozen=True)
class EoConnection:
    """A resolved connection. ``extra`` is the parsed ``extra`` JSON (``{}`` when absent)."""

    conn_id: str
    conn_type: str | None = None
    host: str | None = None
    port: int | None = None
    login: str | None = None
    password: str | None = field(default=None, repr=False)
    schema: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)


def env_var_name(conn_id: str) -> str:
    """Name of the environment variable holding ``conn_id`` (``eo_kafka`` -> ``AIRFLOW_CONN_EO_KAFKA``)."""
    return f"AIRFLOW_CONN_{conn_id.upper()}"


def _parse_extra(raw: Any, conn_id: str) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"connection {conn_id!r}: 'extra' is not valid JSON") from exc
    if not isinstance(value, dict):
        raise ValueError(f"connection {conn_id!r}: 'extra' must be a JSON object")
    return value


def _normalize_conn_type(conn_type: str | None) -> str | None:
    if not conn_type:
        return None
    return "postgres" if conn_type == "postgresql" else conn_type.replace("-", "_")


def parse_connection(conn_id: str, value: str) -> EoConnection:
    """Parse an ``AIRFLOW_CONN_*`` value (JSON object or URI) the way Airflow does.

    Raises ``ValueError`` naming the connection id (never echoing the value).
    """
    text = value.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"connection {conn_id!r}: invalid JSON definition") from exc
        port = data.get("port")
        return EoConnection(
            conn_id=conn_id,
            conn_type=_normalize_conn_type(data.get("conn_type")),
            host=data.get("host") or None,
            port=int(port) if port not in (None, "") else None,
            login=data.get("login") or None,
            password=data.get("password") or None,
            schema=data.get("schema") or None,
            extra=_parse_extra(data.get("extra"), conn_id),
        )
    if "://" not in text:
        raise ValueError(f"connection {conn_id!r}: definition is neither JSON nor a URI")
    scheme, rest = text.split("://", 1)
    protocol = None
    if "://" in rest:  # host with its own protocol, e.g. "http://https://host"
        protocol, rest = rest.split("://", 1)
    parts = urlsplit("//" + rest)
    host = unquote(parts.hostname) if parts.hostname else None
    if host and protocol:
        host = f"{protocol}://{host}"
    extra: dict[str, Any] = {}
    if parts.query:
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        extra = _parse_extra(query[EXTRA_QUERY_KEY], conn_id) if EXTRA_QUERY_KEY in query else query
    return EoConnection(
        conn_id=conn_id,
        conn_type=_normalize_conn_type(scheme),
        host=host,
        port=parts.port,
        login=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        schema=unquote(parts.path[1:]) if parts.path[1:] else None,
        extra=extra,
    )


def connection_from_env(conn_id: str, environ: Mapping[str, str] | None = None) -> EoConnection:
    """Outside Airflow: resolve ``conn_id`` from ``AIRFLOW_CONN_<ID>`` (URI or JSON form)."""
    env = os.environ if environ is None else environ
    value = env.get(env_var_name(conn_id))
    if not value:
        raise ConnectionNotFound(f"connection {conn_id!r} not found: {env_var_name(conn_id)} is not set")
    return parse_connection(conn_id, value)


def connection_of(
    conn_id: str,
    conn_type: str | None,
    host: str | None,
    port: int | str | None,
    login: str | None,
    password: str | None,
    schema: str | None,
    extra: str | Mapping[str, Any] | None,
) -> EoConnection:
    """An ``EoConnection`` from an Airflow connection's fields (``hooks.base.EoHook`` reads
    them from Airflow); raises ``ValueError`` naming ``conn_id`` for an ``extra`` that is
    not a JSON object."""
    return EoConnection(
        conn_id=conn_id,
        conn_type=_normalize_conn_type(conn_type),
        host=host or None,
        port=int(port) if port else None,
        login=login or None,
        password=password or None,
        schema=schema or None,
        extra=_parse_extra(extra, conn_id),
    )
