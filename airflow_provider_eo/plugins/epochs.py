"""``EpochLedgerPlugin`` ("eo"): the epoch ledger in the Airflow 3 UI.

Airflow's API server mounts the plugin's FastAPI app (:mod:`.app`) at ``/eo`` and the
UI shows it in an iframe through two external views: a top-level "Epochs" nav entry
(``eo/``) and an "Epochs" tab on every DAG (``eo/?dag_id={DAG_ID}``: the UI fills in
the DAG id, which preselects the pipeline of ``eo_stream__<p>`` / ``eo_backfill__<p>``).
Hrefs are relative: the UI resolves them against its ``<base href>``.

Settings (``airflow.cfg`` section ``[eo]`` or ``AIRFLOW__EO__...``):

* ``ui_enabled`` (default True): False registers no app and no views (the plugin then
  only carries the backfill DAG's timetable, which Airflow needs to load those DAGs);
* ``ui_ledger_conn_id`` (default ``eo_ledger``): the ledger connection, read through
  ``EoLedgerHook`` by the API server;
* ``ui_kafka_conn_id`` (default ``eo_kafka``): the Kafka connection whose high
  watermarks give the lag columns (``EoKafkaHook``); empty: lag off.

Every route requires an authenticated Airflow user (the UI's JWT cookie or an
``Authorization: Bearer`` token), like the rest of the API server, and shows only the
pipelines whose ``eo_stream__<p>`` DAG that user may read (:mod:`.access`, asked of
Airflow's auth manager). Importing this module is cheap: the API-server security code,
the auth manager and the Kafka client are touched on the first request.
"""

from __future__ import annotations

from typing import Any

from airflow.configuration import conf
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, Request

from airflow_provider_eo.clients.connections import DEFAULT_KAFKA_CONN_ID, DEFAULT_LEDGER_CONN_ID
from airflow_provider_eo.dags.backfill_timetable import BackfillOnlyTimetable
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.ledger.model.refusals import LedgerUnavailable
from airflow_provider_eo.plugins.access import PipelineAccess, StreamDagReaders
from airflow_provider_eo.plugins.app import create_app
from airflow_provider_eo.plugins.partition_lag import WatermarkReader

PLUGIN_NAME = "eo"
URL_PREFIX = "/eo"
CONF_SECTION = "eo"


def ledger_conn_id() -> str:
    """The ledger connection id the UI reads (``[eo] ui_ledger_conn_id``)."""
    return (
        conf.get(CONF_SECTION, "ui_ledger_conn_id", fallback=DEFAULT_LEDGER_CONN_ID) or DEFAULT_LEDGER_CONN_ID
    )


def kafka_conn_id() -> str:
    """The Kafka connection id of the lag columns (``[eo] ui_kafka_conn_id``; "" = lag off)."""
    value = conf.get(CONF_SECTION, "ui_kafka_conn_id", fallback=DEFAULT_KAFKA_CONN_ID)
    return DEFAULT_KAFKA_CONN_ID if value is None else value.strip()


def ui_enabled() -> bool:
    """``[eo] ui_enabled`` (default True)."""
    return conf.getboolean(CONF_SECTION, "ui_enabled", fallback=True)


def open_ledger() -> LedgerReads:
    """The ledger's read model on the configured connection (resolved at every request), naming that
    connection (conn id, ``host:port/db``) in its errors.

    Raises :class:`LedgerUnavailable` naming the conn id when the connection is not
    defined (the ledger itself raises it when its server cannot be reached).
    """
    from airflow.sdk.exceptions import AirflowNotFoundException

    from airflow_provider_eo.hooks.ledger import EoLedgerHook

    conn_id = ledger_conn_id()
    try:
        return EoLedgerHook(ledger_conn_id=conn_id).get_ledger()
    except AirflowNotFoundException as exc:
        raise LedgerUnavailable(f"connection {conn_id!r}", "the connection is not defined") from exc


def open_watermarks() -> WatermarkReader | None:
    """An ``EoKafkaHook`` on the configured connection (resolved at every request);
    None when ``ui_kafka_conn_id`` is empty (lag off)."""
    from airflow_provider_eo.hooks.kafka import EoKafkaHook

    conn_id = kafka_conn_id()
    return EoKafkaHook(kafka_conn_id=conn_id) if conn_id else None


async def require_airflow_user(request: Request) -> Any:
    """FastAPI dependency: the authenticated Airflow user, else 401/403.

    Same rule as the API server's own routes (``security.get_user``): a bearer token
    wins, else the UI's JWT cookie.
    """
    from airflow.api_fastapi.core_api.security import bearer_scheme, get_user

    credentials = await bearer_scheme(request)
    return await get_user(request, None, credentials)


async def stream_dag_readers(request: Request) -> PipelineAccess:
    """The caller's access: pipelines whose ``eo_stream__<p>`` Airflow lets them read."""
    from airflow.api_fastapi.app import get_auth_manager

    user = await require_airflow_user(request)
    multi_team = conf.getboolean("core", "multi_team", fallback=False)
    return StreamDagReaders(get_auth_manager(), user, multi_team=multi_team)


#: The ledger app mounted at ``/eo`` (None when ``ui_enabled`` is False).
app = (
    create_app(
        open_ledger,
        dependencies=[Depends(require_airflow_user)],
        access=stream_dag_readers,
        watermarks=open_watermarks,
    )
    if ui_enabled()
    else None
)


NAV_VIEW: dict[str, Any] = {
    "name": "Epochs",
    "href": "eo/",
    "destination": "nav",
    "url_route": "eo-epochs",
    "nav_top_level": True,
}
DAG_VIEW: dict[str, Any] = {
    "name": "Epochs",
    "href": "eo/?dag_id={DAG_ID}",
    "destination": "dag",
    "url_route": "eo-dag-epochs",
}


class EpochLedgerPlugin(AirflowPlugin):
    """Registers the ledger app at ``/eo`` and the "Epochs" nav entry and DAG tab."""

    name = PLUGIN_NAME
    # the backfill DAG's timetable: Airflow serializes only core or plugin-listed timetables
    timetables = [BackfillOnlyTimetable]
    fastapi_apps = [{"app": app, "url_prefix": URL_PREFIX, "name": "Epoch ledger"}] if app else []
    external_views = [NAV_VIEW, DAG_VIEW] if ui_enabled() else []
