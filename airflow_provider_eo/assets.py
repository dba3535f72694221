"""The Airflow Asset of a pipeline's HBase table, and what its events carry.

Every committed epoch is announced as an event of the Asset naming the pipeline's HBase
table, so downstream DAGs can ``schedule=[asset_for(spec)]`` (docs/operators.md, "Assets").

The URI is ``hbase://<hbase_conn_id>/<namespace>/<table>``, e.g.
``hbase://eo_hbase/default/orders``. The authority is the Airflow connection id of the
HBase Thrift server, not its host and port: a DAG's outlets are fixed when the DAG file is
parsed, and a connection's host is only known by looking the connection up (I/O the DAG
processor must not do). The connection id names the cluster (and its ``table_prefix``), so
(connection id, namespace, table) names one physical table. The namespace is always
spelled out (``default`` for a table declared without one), so ``orders`` and
``default:orders`` are one asset, as they are one table in HBase.

The provider registers :func:`sanitize_uri` for the ``hbase`` scheme (``asset-uris`` in
``get_provider_info``): ``Asset("hbase://eo_hbase/orders")`` is normalized to
``hbase://eo_hbase/default/orders``, and a URI that names no table is refused when the DAG
is parsed. The Asset's name is its canonical URI, so ``Asset("hbase://...")`` written by
hand with the canonical URI is the same asset as :func:`asset_for`'s.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias

from airflow_provider_eo.clients.connections import DEFAULT_HBASE_CONN_ID
from airflow_provider_eo.ledger.model.epoch import Epoch

if TYPE_CHECKING:
    from urllib.parse import SplitResult

    from airflow_provider_eo.config import PipelineSpec

SCHEME = "hbase"
DEFAULT_NAMESPACE = "default"
_CONN_ID_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_NAMESPACE_RE = re.compile(r"[A-Za-z0-9_]+")
_QUALIFIER_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def table_uri(table: str, hbase_conn_id: str = DEFAULT_HBASE_CONN_ID) -> str:
    """The canonical asset URI of HBase ``table`` (``[namespace:]name``) behind ``hbase_conn_id``.

    Raises ``ValueError`` for a connection id or table name HBase or a URI cannot carry.
    """
    namespace, _, qualifier = table.rpartition(":")
    path = f"/{namespace or DEFAULT_NAMESPACE}/{qualifier}"
    _check(hbase_conn_id, path)
    return f"{SCHEME}://{hbase_conn_id}{path}"


def asset_for(spec: PipelineSpec, hbase_conn_id: str = DEFAULT_HBASE_CONN_ID) -> Asset:
    """The Asset of ``spec``'s HBase table (name = URI = :func:`table_uri`).

    The DAG factory declares it as the commit task's outlet; a downstream DAG schedules on
    the same value. No I/O: safe at DAG parse time.
    """
    uri = table_uri(spec.hbase_table, hbase_conn_id)
    return Asset(name=uri, uri=uri)


def recommits_alias(asset: Asset) -> AssetAlias:
    """The alias through which recovery tasks announce the epochs they re-commit on ``asset``.

    A recovery task usually commits nothing; an alias outlet (unlike an Asset outlet)
    emits no event unless the task adds one, and can carry one event per epoch.
    """
    return AssetAlias(name=f"eo-recommits:{asset.uri}")


def epoch_event_extra(epoch: Epoch) -> dict[str, Any]:
    """The extra of a committed epoch's asset event: :meth:`Epoch.to_summary` plus
    ``bad_records`` (dead-lettered records, from the write step's vote; 0 without one)."""
    return {**epoch.to_summary(), "bad_records": int((epoch.metrics or {}).get("bad_records", 0))}


def sanitize_uri(parts: SplitResult) -> SplitResult:
    """Airflow's URI handler for ``hbase``: canonical ``hbase://<conn_id>/<namespace>/<table>``.

    Accepts ``/<table>``, ``/<namespace>:<table>`` and ``/<namespace>/<table>`` paths;
    raises ``ValueError`` for user info, a port, a query, or a path that names no table.
    """
    if "@" in parts.netloc or ":" in parts.netloc:
        raise ValueError(f"hbase asset URI: the authority must be a connection id, got {parts.netloc!r}")
    if parts.query:
        raise ValueError(f"hbase asset URI takes no query, got {parts.query!r}")
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) == 1:
        namespace, _, qualifier = segments[0].rpartition(":")
        segments = [namespace or DEFAULT_NAMESPACE, qualifier]
    path = "/" + "/".join(segments)
    if len(segments) != 2:
        raise ValueError(f"hbase asset URI path must be /<namespace>/<table>, got {parts.path!r}")
    _check(parts.netloc, path)
    return parts._replace(path=path, query="", fragment="")


def _check(conn_id: str, path: str) -> None:
    if not _CONN_ID_RE.fullmatch(conn_id):
        raise ValueError(f"hbase asset URI: not a connection id: {conn_id!r}")
    _, namespace, qualifier = path.split("/")
    if not _NAMESPACE_RE.fullmatch(namespace) or not _QUALIFIER_RE.fullmatch(qualifier):
        raise ValueError(f"hbase asset URI: not an HBase table: {namespace}:{qualifier}")
