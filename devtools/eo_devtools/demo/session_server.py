"""The Spark Connect server of the demo's session-mode pipeline, started beside the other parts.

:meth:`SessionServer.start` starts the stack's Spark Connect server (what ``eo-stack up
--spark-connect`` starts: :meth:`.LocalStack.spark_connect_up`) in a background thread, so its
JVM starts while the demo's submit-mode pipelines run; a server already running is kept.
:meth:`SessionServer.ready` waits for it to answer, then makes sure the Airflow the demo drives
has the pipeline's ``spark_connect`` connection for it: created, or its host and port updated,
through the REST API, as a user would add it. The stack's Airflow gets the stack's other
connections as environment variables when it starts, which may be before this server ran; a
connection the Airflow's environment defines wins over the metadata database's, so it is left
alone (``eo-stack env`` names the server it started with).
"""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from eo_devtools.stack.airflow_api import AirflowApiError, AirflowClient
from eo_devtools.stack.spark_connect import connect_url, spark_connect_connection
from eo_devtools.stack.stack import LocalStack


@dataclass(frozen=True)
class SessionServer:
    """The stack's Spark Connect server on its way up (``port``: its gRPC port, once started)."""

    port: Future[int]

    @classmethod
    def start(cls, stack: LocalStack) -> SessionServer:
        """Start the server in a background thread (returns at once)."""
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spark-connect-up")
        started = cls(pool.submit(stack.spark_connect_up))
        pool.shutdown(wait=False)  # the thread ends when the server answers (or fails to start)
        return started

    def ready(self, client: AirflowClient, conn_id: str) -> str:
        """Wait for the server, give the Airflow of ``client`` the connection ``conn_id`` to it;
        return its ``sc://`` URL. Raises what the server's start raised (``RuntimeError``, a
        ``TimeoutError``) or ``AirflowApiError`` when Airflow refuses the connection."""
        port = self.port.result()
        ensure_connection(client, conn_id, port)
        return connect_url(port)


def ensure_connection(client: AirflowClient, conn_id: str, port: int) -> None:
    """The connection ``conn_id`` in Airflow's metadata database, of the ``spark_connect`` type,
    pointing at the stack's server on ``port`` (created, or updated when it points elsewhere)."""
    wanted: dict[str, Any] = {"connection_id": conn_id, **json.loads(spark_connect_connection(port))}
    path = f"connections/{quote(conn_id, safe='')}"
    try:
        current = client.api("GET", path)
    except AirflowApiError as exc:
        if exc.status != 404:
            raise
        client.api("POST", "connections", wanted)
        return
    if any(current.get(key) != value for key, value in wanted.items()):
        client.api("PATCH", path, wanted)
