"""The registry connection -> :class:`RegistrySettings` -> confluent-kafka client configuration.

Connection (Airflow, any conn type; ``http``/``https`` style):

* URL: ``extra["url"]`` when set (comma-separated URLs allowed), else
  ``<scheme>://<host>[:<port>]/<path>`` where the scheme is the ``schema`` field when that is
  ``http``/``https`` (the HTTP connection form), else the conn type when it is ``http``/``https``
  (the URI form ``http://host:8081/apis/ccompat/v7``), else ``http``;
  the path is ``extra["path"]``, else the ``schema`` field when it is not a scheme
  (the URI form's path). A host that already is a URL (``https://reg``) keeps its scheme.
* basic auth: ``login`` / ``password`` (confluent ``basic.auth.user.info``).
* TLS, in ``extra``: ``ssl.ca.location``, ``ssl.certificate.location``,
  ``ssl.key.location``, ``ssl.key.password``.
* client tuning, in ``extra``: ``timeout`` (seconds per request, default 10),
  ``max.retries`` (default 2), ``retries.wait.ms`` (default 200), ``retries.max.wait.ms``
  (default 2000): a request that fails is retried inside the task before it counts as
  an outage.

Failures name the registry by :attr:`RegistrySettings.where`: its URL without credentials and
the connection id (``Schema Registry https://reg:8081 (connection 'schema_registry')``).

Airflow-free (the Spark driver resolves the connection from its environment).
``repr`` never shows the password, the key password or credentials inside the URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.config.specs import MappingSpec

#: The formats decoded with a registry's schemas (Confluent wire format).
REGISTRY_FORMATS = ("avro", "protobuf", "json_schema")
SCHEMES = ("http", "https")
TLS_KEYS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_RETRIES_WAIT_MS = 200
DEFAULT_RETRIES_MAX_WAIT_MS = 2000


@dataclass(frozen=True)
class RegistrySettings:
    """Where the registry is and how to authenticate; picklable (travels to executors)."""

    url: str = field(repr=False)
    user_info: str | None = field(default=None, repr=False)
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    retries_wait_ms: int = DEFAULT_RETRIES_WAIT_MS
    retries_max_wait_ms: int = DEFAULT_RETRIES_MAX_WAIT_MS
    conn_id: str = ""

    @property
    def display_url(self) -> str:
        """The URL(s) without any ``user:password@`` part: safe to log."""
        return ",".join(_without_userinfo(url.strip()) for url in self.url.split(","))

    @property
    def where(self) -> str:
        """:attr:`display_url` and the connection id, for error messages: safe to log."""
        return f"{self.display_url} (connection {self.conn_id!r})" if self.conn_id else self.display_url

    def __repr__(self) -> str:
        tls = ", ".join(
            f"{name}={value!r}"
            for name, value in (
                ("ssl_ca_location", self.ssl_ca_location),
                ("ssl_certificate_location", self.ssl_certificate_location),
                ("ssl_key_location", self.ssl_key_location),
            )
            if value
        )
        auth = "basic" if self.user_info else "none"
        return f"RegistrySettings(url={self.display_url!r}, auth={auth}{', ' + tls if tls else ''})"

    def client_conf(self) -> dict[str, Any]:
        """confluent-kafka ``SchemaRegistryClient`` configuration (holds secrets: never log it)."""
        conf: dict[str, Any] = {
            "url": self.url,
            "timeout": self.timeout_s,
            "max.retries": self.max_retries,
            "retries.wait.ms": self.retries_wait_ms,
            "retries.max.wait.ms": self.retries_max_wait_ms,
        }
        if self.user_info:
            conf["basic.auth.user.info"] = self.user_info
        for key, value in (
            ("ssl.ca.location", self.ssl_ca_location),
            ("ssl.certificate.location", self.ssl_certificate_location),
            ("ssl.key.location", self.ssl_key_location),
            ("ssl.key.password", self.ssl_key_password),
        ):
            if value:
                conf[key] = value
        return conf


def registry_formats(mapping: MappingSpec) -> dict[str, str]:
    """``{"value": fmt, "key": fmt}`` of the parts of ``mapping`` whose format needs the
    registry; empty for plain formats (json, string, bytes)."""
    formats = {"value": mapping.value_format, "key": mapping.key_format}
    return {part: fmt for part, fmt in formats.items() if fmt in REGISTRY_FORMATS}


def registry_settings(conn: EoConnection) -> RegistrySettings:
    """Settings of a registry connection (rules in the module docstring).

    Raises ``ValueError`` naming the connection id (never a value) when no URL can be built.
    """
    extra = {str(k): v for k, v in conn.extra.items() if v not in (None, "")}
    url = str(extra["url"]) if "url" in extra else _url_from_fields(conn, extra)
    user_info = f"{conn.login}:{conn.password or ''}" if conn.login else None
    return RegistrySettings(
        url=url,
        user_info=user_info,
        ssl_ca_location=_optional(extra.get("ssl.ca.location")),
        ssl_certificate_location=_optional(extra.get("ssl.certificate.location")),
        ssl_key_location=_optional(extra.get("ssl.key.location")),
        ssl_key_password=_optional(extra.get("ssl.key.password")),
        timeout_s=float(extra.get("timeout", DEFAULT_TIMEOUT_S)),
        max_retries=int(extra.get("max.retries", DEFAULT_MAX_RETRIES)),
        retries_wait_ms=int(extra.get("retries.wait.ms", DEFAULT_RETRIES_WAIT_MS)),
        retries_max_wait_ms=int(extra.get("retries.max.wait.ms", DEFAULT_RETRIES_MAX_WAIT_MS)),
        conn_id=conn.conn_id,
    )


def _url_from_fields(conn: EoConnection, extra: dict[str, Any]) -> str:
    if not conn.host:
        raise ValueError(f"Schema Registry connection {conn.conn_id!r}: set host (or 'url' in extra)")
    schema = conn.schema or ""
    if "://" in conn.host:
        base = conn.host
    else:
        scheme = schema if schema in SCHEMES else conn.conn_type if conn.conn_type in SCHEMES else "http"
        base = f"{scheme}://{conn.host}"
    if conn.port:
        base = f"{base}:{conn.port}"
    path = str(extra.get("path", "" if schema in SCHEMES else schema)).strip("/")
    return f"{base}/{path}" if path else base


def _optional(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
