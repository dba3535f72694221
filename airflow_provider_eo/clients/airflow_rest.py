"""``AirflowApi``: what ``eo-ledger`` asks of Airflow's public REST API v2.

``eo-ledger seek`` and ``reset`` ask whether a pipeline's stream DAG is paused, and
``eo-ledger dead-letters replay`` triggers its backfill DAG. The API is reached through
the Airflow connection ``airflow_api`` (``AIRFLOW_CONN_AIRFLOW_API``, e.g.
``http://user:password@host:8080``; ``https`` in the extra ``{"scheme": "https"}`` or the
URI's scheme): the password never appears in an argument or a log line. Authentication
is Airflow 3's: ``POST /auth/token`` with the login returns a JWT sent as a bearer
token. Standard library only.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

from airflow_provider_eo.clients.connections import EoConnection, connection_from_env
from airflow_provider_eo.errors import ConfigError

DEFAULT_AIRFLOW_API_CONN_ID = "airflow_api"


class AirflowApiError(ConfigError, RuntimeError):
    """Airflow's API could not be reached or refused: the message names the call and the
    status (never the password)."""


class AirflowApi:
    """Airflow's REST API v2 at the ``conn_id`` connection (resolved from the environment)."""

    def __init__(self, conn_id: str = DEFAULT_AIRFLOW_API_CONN_ID, *, timeout_s: float = 30.0) -> None:
        self.conn_id = conn_id
        self.timeout_s = timeout_s
        self._conn: EoConnection | None = None
        self._token: str | None = None

    @property
    def url(self) -> str:
        """The API's base URL (scheme, host and port; no credentials)."""
        conn = self._connection()
        scheme = str(conn.extra.get("scheme") or ("https" if conn.conn_type == "https" else "http"))
        port = f":{conn.port}" if conn.port else ""
        return f"{scheme}://{conn.host or 'localhost'}{port}"

    def dag_is_paused(self, dag_id: str) -> bool:
        """Whether Airflow reports ``dag_id`` paused; ``AirflowApiError`` (404: unknown DAG)."""
        return bool(self._call("GET", f"/api/v2/dags/{quote(dag_id, safe='')}")["is_paused"])

    def trigger_dag_run(self, dag_id: str, conf: dict[str, Any], note: str | None = None) -> str:
        """Trigger a run of ``dag_id`` with ``conf`` (its params); returns the new ``dag_run_id``."""
        body: dict[str, Any] = {"logical_date": None, "conf": conf}
        if note:
            body["note"] = note
        answer = self._call("POST", f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns", body)
        return str(answer["dag_run_id"])

    def _connection(self) -> EoConnection:
        if self._conn is None:
            self._conn = connection_from_env(self.conn_id)
        return self._conn

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        status, text = self._send(method, path, body, self._login())
        if status == 401:  # an expired token: log in once more
            self._token = None
            status, text = self._send(method, path, body, self._login())
        if status >= 400:
            raise AirflowApiError(f"Airflow API {method} {self.url}{path}: HTTP {status}: {text[:500]}")
        return json.loads(text) if text else None

    def _login(self) -> str:
        if self._token is None:
            conn = self._connection()
            login = {"username": conn.login or "", "password": conn.password or ""}
            status, text = self._send("POST", "/auth/token", login, None)
            if status not in (200, 201):
                raise AirflowApiError(
                    f"Airflow API login at {self.url} as {conn.login!r} (connection {self.conn_id!r}): "
                    f"HTTP {status}: {text[:500]}"
                )
            self._token = str(json.loads(text)["access_token"])
        return self._token

    def _send(self, method: str, path: str, body: Any, token: str | None) -> tuple[int, str]:
        return send_json(self.url, method, path, body, token, self.timeout_s)


def send_json(
    url: str, method: str, path: str, body: Any, token: str | None, timeout_s: float
) -> tuple[int, str]:
    """``method`` on ``url + path`` with ``body`` as JSON (None: no body) and ``token`` as a
    bearer token; returns (HTTP status, body text), error statuses included. Raises
    ``AirflowApiError`` when the server cannot be reached."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"{url}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as exc:
        raise AirflowApiError(f"Airflow API {method} {url}{path}: unreachable: {exc}") from exc
