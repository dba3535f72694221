"""The HBase connection's security keys (clients/hbase_security.py): parsed values, the default
(no ``security`` kwarg), and each refusal's exact message naming the connection and the key."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs
from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.clients.hbase_security import HBaseSecurity, hbase_security
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.hooks.hbase import EoHBaseHook

KERBEROS = {
    "auth": "kerberos",
    "kerberos_principal": "eo-writer@EO.TEST",
    "kerberos_keytab": "/k/eo-writer.keytab",
    "kerberos_service_host": "localhost",
    "krb5_conf": "/k/krb5.conf",
}


def test_defaults_add_no_security() -> None:
    assert "security" not in hbase_connection_kwargs(EoConnection("h"))
    assert hbase_security("h", {}, "buffered") == HBaseSecurity()


def test_kerberos_settings() -> None:
    extra = {**KERBEROS, "extra__eo_hbase__sasl_qop": "auth-int"}
    kwargs = hbase_connection_kwargs(EoConnection("h", host="t", port=1, extra=extra))
    assert kwargs["security"] == {
        "auth": "kerberos",
        "kerberos_principal": "eo-writer@EO.TEST",
        "kerberos_keytab": "/k/eo-writer.keytab",
        "kerberos_ccache": None,
        "kerberos_service": "hbase",
        "kerberos_service_host": "localhost",
        "krb5_conf": "/k/krb5.conf",
        "sasl_qop": "auth-int",
        "ssl": False,
        "ssl_ca": None,
        "http": False,
    }
    assert HBaseSecurity.from_dict(kwargs["security"]).kerberos
    assert hbase_security("h", {"auth": "kerberos"}, "buffered").sasl_qop == "auth-conf"


def test_https_settings() -> None:
    """``transport: http`` + ``ssl``: HTTPS against the CA; the kwargs keep transport http."""
    extra = {"transport": "http", "ssl": True, "ssl_ca": "/p/ca.pem"}
    kwargs = hbase_connection_kwargs(EoConnection("h", host="t", port=9443, extra=extra))
    assert kwargs["transport"] == "http"
    security = HBaseSecurity.from_dict(kwargs["security"])
    assert (security.http, security.ssl, security.ssl_ca) == (True, True, "/p/ca.pem")
    assert not security.kerberos
    assert not security.is_default


def test_plain_http_is_secured_settings_too() -> None:
    """Plain HTTP is not happybase's: it needs EoThriftConnection, so it carries ``security``."""
    kwargs = hbase_connection_kwargs(EoConnection("h", extra={"extra__eo_hbase__transport": "http"}))
    assert kwargs["security"]["http"] is True
    assert kwargs["security"]["ssl"] is False


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"auth": "basic"}, "HBase connection 'h': extra.auth must be none or kerberos, not 'basic'"),
        (
            {**KERBEROS, "sasl_qop": "privacy"},
            "HBase connection 'h': extra.sasl_qop must be auth-conf or auth-int or auth, not 'privacy'",
        ),
        ({"ssl": "yes"}, "HBase connection 'h': extra.ssl must be true or false, not 'yes'"),
        (
            {"ssl": True},
            "HBase connection 'h': extra.ssl needs extra.transport http (HBase's Thrift server "
            "serves TLS only in its HTTP mode, not on the buffered transport)",
        ),
        (
            {"ssl": "true", "transport": "framed"},
            "HBase connection 'h': extra.ssl needs extra.transport http (HBase's Thrift server "
            "serves TLS only in its HTTP mode, not on the framed transport)",
        ),
        (
            {**KERBEROS, "transport": "http", "ssl": True},
            "HBase connection 'h': extra.auth kerberos cannot be used with extra.transport http "
            "(HBase's HTTP mode authenticates with SPNEGO, which is not built); use buffered",
        ),
        ({"transport": "https"}, "HBase connection 'h': transport must be buffered, framed or http"),
        ({"ssl_ca": "/p/ca.pem"}, "HBase connection 'h': extra.ssl_ca is set but extra.ssl is not true"),
        (
            {**KERBEROS, "kerberos_principal": " "},
            "HBase connection 'h': extra.kerberos_principal must be a non-empty string",
        ),
        (
            {"kerberos_principal": "eo-writer"},
            "HBase connection 'h': extra.kerberos_principal is set but extra.auth is not kerberos",
        ),
        (
            {"auth": "kerberos", "kerberos_keytab": "/k/x.keytab"},
            "HBase connection 'h': extra.kerberos_keytab needs extra.kerberos_principal",
        ),
        (
            {**KERBEROS, "kerberos_ccache": "FILE:/tmp/cc"},
            "HBase connection 'h': extra.kerberos_ccache and extra.kerberos_keytab exclude each other "
            "(a keytab logs in to a private ticket cache)",
        ),
        (
            {**KERBEROS, "transport": "framed"},
            "HBase connection 'h': extra.transport framed cannot carry SASL "
            "(HBase's Thrift server takes SASL on the buffered transport only); use buffered",
        ),
    ],
)
def test_refusals_name_the_connection_and_the_key(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        hbase_connection_kwargs(EoConnection("h", extra=extra))
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "extra",
    [
        {"auth": "kerberos", "kerberos_principal": "eo-writer@EO.TEST"},
        {"transport": "http", "ssl": True, "ssl_ca": "/p/ca.pem"},
        {"transport": "http"},
    ],
)
def test_a_pool_refuses_a_secured_connection(monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any]) -> None:
    """happybase's pool opens plain sockets: a secured or HTTP connection is refused, not downgraded."""
    monkeypatch.setenv("AIRFLOW_CONN_EO_HBASE_SECURED", json.dumps({"conn_type": "hbase", "extra": extra}))
    with pytest.raises(ConfigError) as info:
        EoHBaseHook(hbase_conn_id="eo_hbase_secured").get_pool(size=2)
    assert str(info.value) == (
        "HBase connection 'eo_hbase_secured': a connection pool cannot use its Kerberos, TLS or HTTP "
        "settings; use get_conn()"
    )
