"""The HBase connection's security settings: SASL/GSSAPI (Kerberos) and TLS to the Thrift server.

Contract: :func:`hbase_security` reads these keys of the connection's ``extra`` and returns a
:class:`HBaseSecurity` (JSON-able with :meth:`HBaseSecurity.to_dict`, so the Spark application
gets it in its task settings); a bad value raises ``ValueError`` naming the connection and the
key, never a secret (the keys hold paths and names only, no keytab bytes, no password):

- ``auth``: ``none`` (default) or ``kerberos``;
- ``kerberos_principal`` (the client, e.g. ``eo-writer@EO.TEST``), ``kerberos_keytab`` (its
  keytab: logged in from it, needs the principal), ``kerberos_ccache`` (a ticket cache to use
  instead of a keytab), ``kerberos_service`` (default ``hbase``), ``kerberos_service_host``
  (default: the Thrift server's host), ``krb5_conf`` (a ``krb5.conf``, else the system's);
- ``sasl_qop``: ``auth-conf`` (default), ``auth-int`` or ``auth``;
- ``ssl``: ``true``/``false`` (default false), ``ssl_ca`` (a CA file, needs ``ssl``).

The connection's ``transport: http`` (Thrift over HTTP, HBase's
``hbase.regionserver.thrift.http`` mode) sets :attr:`HBaseSecurity.http`; with ``ssl`` it is
HTTPS, verifying the server's certificate and host name against ``ssl_ca``. Refused, naming
the connection: ``ssl`` on the buffered or framed transport (HBase's Thrift server serves TLS
only in its HTTP mode); SASL on the framed transport (HBase takes SASL on the buffered
transport only); ``auth: kerberos`` with ``transport: http`` (HBase authenticates HTTP with
SPNEGO, which is not built).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

AUTH_VALUES = ("none", "kerberos")
QOP_VALUES = ("auth-conf", "auth-int", "auth")
KERBEROS_KEYS = (
    "kerberos_principal",
    "kerberos_keytab",
    "kerberos_ccache",
    "kerberos_service",
    "kerberos_service_host",
    "krb5_conf",
)


@dataclass(frozen=True)
class HBaseSecurity:
    """How a Thrift connection authenticates and encrypts (see the module's docstring)."""

    auth: str = "none"
    kerberos_principal: str | None = None
    kerberos_keytab: str | None = None
    kerberos_ccache: str | None = None
    kerberos_service: str = "hbase"
    kerberos_service_host: str | None = None
    krb5_conf: str | None = None
    sasl_qop: str = "auth-conf"
    ssl: bool = False
    ssl_ca: str | None = None
    http: bool = False

    @property
    def kerberos(self) -> bool:
        return self.auth == "kerberos"

    @property
    def is_default(self) -> bool:
        """No SASL, no TLS, no HTTP: a plain happybase connection."""
        return self == HBaseSecurity()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> HBaseSecurity:
        return cls(**dict(values))


def _choice(conn_id: str, extra: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> str:
    value = extra.get(key, choices[0])
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise ValueError(
            f"HBase connection {conn_id!r}: extra.{key} must be {' or '.join(choices)}, not {value!r}"
        )
    return value.strip().lower()


def _text(conn_id: str, extra: Mapping[str, Any], key: str) -> str | None:
    value = extra.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"HBase connection {conn_id!r}: extra.{key} must be a non-empty string")
    return value.strip()


def _flag(conn_id: str, extra: Mapping[str, Any], key: str) -> bool:
    value = extra.get(key, False)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"HBase connection {conn_id!r}: extra.{key} must be true or false, not {value!r}")


def hbase_security(conn_id: str, extra: Mapping[str, Any], transport: str) -> HBaseSecurity:
    """The validated security settings of the HBase connection ``conn_id`` (see the module)."""
    auth = _choice(conn_id, extra, "auth", AUTH_VALUES)
    texts = {key: _text(conn_id, extra, key) for key in KERBEROS_KEYS}
    qop = _choice(conn_id, extra, "sasl_qop", QOP_VALUES)
    ssl = _flag(conn_id, extra, "ssl")
    ssl_ca = _text(conn_id, extra, "ssl_ca")
    if auth != "kerberos":
        for key in (*KERBEROS_KEYS, "sasl_qop"):
            if key in extra:
                raise ValueError(
                    f"HBase connection {conn_id!r}: extra.{key} is set but extra.auth is not kerberos"
                )
    else:
        if transport == "http":
            raise ValueError(
                f"HBase connection {conn_id!r}: extra.auth kerberos cannot be used with extra.transport "
                "http (HBase's HTTP mode authenticates with SPNEGO, which is not built); use buffered"
            )
        if transport != "buffered":
            raise ValueError(
                f"HBase connection {conn_id!r}: extra.transport {transport} cannot carry SASL "
                "(HBase's Thrift server takes SASL on the buffered transport only); use buffered"
            )
        if texts["kerberos_keytab"] and not texts["kerberos_principal"]:
            raise ValueError(
                f"HBase connection {conn_id!r}: extra.kerberos_keytab needs extra.kerberos_principal"
            )
        if texts["kerberos_keytab"] and texts["kerberos_ccache"]:
            raise ValueError(
                f"HBase connection {conn_id!r}: extra.kerberos_ccache and extra.kerberos_keytab "
                "exclude each other (a keytab logs in to a private ticket cache)"
            )
    if ssl_ca and not ssl:
        raise ValueError(f"HBase connection {conn_id!r}: extra.ssl_ca is set but extra.ssl is not true")
    if ssl and transport != "http":
        raise ValueError(
            f"HBase connection {conn_id!r}: extra.ssl needs extra.transport http (HBase's Thrift server "
            f"serves TLS only in its HTTP mode, not on the {transport} transport)"
        )
    return HBaseSecurity(
        auth=auth,
        kerberos_principal=texts["kerberos_principal"],
        kerberos_keytab=texts["kerberos_keytab"],
        kerberos_ccache=texts["kerberos_ccache"],
        kerberos_service=texts["kerberos_service"] or "hbase",
        kerberos_service_host=texts["kerberos_service_host"],
        krb5_conf=texts["krb5_conf"],
        sasl_qop=qop,
        ssl=ssl,
        ssl_ca=ssl_ca,
        http=transport == "http",
    )
