"""HBase hook: happybase connections and pools to an HBase Thrift1 server."""

from __future__ import annotations

from typing import Any

import happybase

from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs
from airflow_provider_eo.clients.connections import DEFAULT_HBASE_CONN_ID
from airflow_provider_eo.clients.hbase_thrift import hbase_connection
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.hooks.base import EoHook


class EoHBaseHook(EoHook):
    """Builds happybase clients from an ``eo_hbase`` connection.

    host/port of the Thrift server; ``extra``: ``servers`` (every Thrift server, for the
    Spark writer's spreading and failover; the hook uses the first), ``transport``
    (buffered|framed|http; http with ``ssl``/``ssl_ca`` is HTTPS), ``protocol``
    (binary|compact), ``table_prefix``, ``table_prefix_separator``, ``timeout_ms``,
    ``compat``. Any conn_type is accepted for the connection id.

    :param hbase_conn_id: connection id (default ``eo_hbase``).
    """

    conn_name_attr = "hbase_conn_id"
    default_conn_name = DEFAULT_HBASE_CONN_ID
    conn_type = "eo_hbase"
    hook_name = "EO HBase (Thrift1)"

    def __init__(self, hbase_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.hbase_conn_id = hbase_conn_id
        self._kwargs: dict[str, Any] | None = None

    @property
    def connection_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``happybase.Connection`` (resolved once)."""
        if self._kwargs is None:
            self._kwargs = hbase_connection_kwargs(self.eo_connection(self.hbase_conn_id))
        return dict(self._kwargs)

    def get_conn(self) -> happybase.Connection:
        """A new, open happybase connection; the caller closes it."""
        return hbase_connection(self.connection_kwargs, conn_id=self.hbase_conn_id)

    def get_pool(self, size: int = 4) -> happybase.ConnectionPool:
        """A happybase connection pool of ``size`` connections (opened lazily by happybase).

        Raises :class:`ConfigError` for a secured connection (``auth: kerberos``, ``ssl`` or
        ``transport: http``): happybase's pool opens plain sockets only; use :meth:`get_conn`."""
        kwargs = self.connection_kwargs
        if "security" in kwargs:
            raise ConfigError(
                f"HBase connection {self.hbase_conn_id!r}: a connection pool cannot use its Kerberos, TLS or "
                "HTTP settings; use get_conn()"
            )
        return happybase.ConnectionPool(size, **kwargs)

    def test_connection(self) -> tuple[bool, str]:
        """(True, summary) when the Thrift server lists its tables, else (False, error)."""
        try:
            conn = self.get_conn()
            try:
                tables = conn.tables()
            finally:
                conn.close()
        except Exception as exc:
            return False, f"HBase connection {self.hbase_conn_id!r} failed: {exc}"
        return True, f"Connected: {len(tables)} table(s) visible"
