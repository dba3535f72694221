"""``EoHook``: what the provider's hooks share. Each resolves its Airflow connection into
the Airflow-free :class:`~airflow_provider_eo.clients.connections.EoConnection` the clients
take, and describes its connection form from ``get_provider_info()``
(``connection_forms.py``)."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook

from airflow_provider_eo.clients.connections import EoConnection, connection_of
from airflow_provider_eo.connection_forms import field_behaviour


class EoHook(BaseHook):
    """A hook of one of the provider's connection types (``conn_type``)."""

    conn_type: str

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """The connection form of ``conn_type``: hidden fields, relabeling, placeholders."""
        return field_behaviour(cls.conn_type)

    @staticmethod
    def eo_connection(conn_id: str) -> EoConnection:
        """``conn_id`` resolved by Airflow (``BaseHook.get_connection``: any conn_type, any
        secrets backend) as an ``EoConnection``; raises what Airflow raises for an unknown id."""
        conn = BaseHook.get_connection(conn_id)
        return connection_of(
            conn_id, conn.conn_type, conn.host, conn.port, conn.login, conn.password, conn.schema, conn.extra
        )
