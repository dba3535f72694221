"""A small client of Airflow's public REST API v2 (what the demo and the tests drive runs with).

Authentication as a user would script it: ``POST /auth/token`` with the username and
password returns a JWT, sent as ``Authorization: Bearer``; a 401 later (an expired
token) logs in again once. Errors raise :class:`AirflowApiError` with the status and
the body. HTTP goes through the provider's `send_json` (an unreachable server: its
``AirflowApiError``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from airflow_provider_eo.clients.airflow_rest import AirflowApiError as ApiUnreachable
from airflow_provider_eo.clients.airflow_rest import send_json

FINISHED_STATES = frozenset({"success", "failed"})
POLL_S = 0.25
"""Seconds between two questions of a wait (one small GET each)."""


class AirflowApiError(RuntimeError):
    """The API answered with an error status; ``status`` and ``body`` say what it answered."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:2000]}")
        self.status = status
        self.body = body


class AirflowClient:
    """REST API v2 of the Airflow at ``url`` as ``username`` (the password never leaves this object)."""

    def __init__(self, url: str, username: str, password: str) -> None:
        self.url = url.rstrip("/")
        self.username = username
        self._password = password
        self._token: str | None = None

    @classmethod
    def from_login_file(cls, path: Path) -> AirflowClient:
        """A client for the login file the local stack writes (``url``, ``username``, ``password``)."""
        login = json.loads(path.read_text())
        return cls(login["url"], login["username"], login["password"])

    def _send(self, method: str, path: str, body: Any, token: str | None) -> tuple[int, str]:
        return send_json(self.url, method, path, body, token, timeout_s=30)

    def token(self) -> str:
        """A JWT for the user (``POST /auth/token``), cached until the API refuses it."""
        if self._token is None:
            credentials = {"username": self.username, "password": self._password}
            status, body = self._send("POST", "/auth/token", credentials, None)
            if status not in (200, 201):
                raise AirflowApiError("POST", "/auth/token", status, body)
            self._token = str(json.loads(body)["access_token"])
        return self._token

    def api(self, method: str, path: str, json_body: Any = None) -> Any:
        """``method`` on ``/api/v2/<path>``; the parsed JSON answer (None for an empty one)."""
        full = path if path.startswith("/") else f"/api/v2/{path}"
        status, body = self._send(method, full, json_body, self.token())
        if status == 401:
            self._token = None
            status, body = self._send(method, full, json_body, self.token())
        if status >= 400:
            raise AirflowApiError(method, full, status, body)
        return json.loads(body) if body else None

    def wait_for_dag(self, dag_id: str, timeout: float = 180) -> None:
        """Wait until the dag-processor has parsed ``dag_id`` and the API server can load
        its serialized form (``dags/{id}/details``: the DAG row may come a moment before it,
        and a trigger needs the serialized DAG)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.api("GET", f"dags/{quote(dag_id)}/details")
                return
            except AirflowApiError as exc:
                if exc.status != 404 or time.monotonic() > deadline:
                    raise
            time.sleep(POLL_S)

    def unpause(self, dag_id: str) -> None:
        """Unpause ``dag_id`` (runs of a paused DAG stay queued)."""
        self.api("PATCH", f"dags/{quote(dag_id)}", {"is_paused": False})

    def trigger(
        self, dag_id: str, conf: dict[str, Any] | None = None, logical_date: str | None = None
    ) -> str:
        """Create a manual run (``logical_date``: ISO 8601 or None); returns its run id."""
        body = {"logical_date": logical_date, "conf": conf or {}}
        run = self.api("POST", f"dags/{quote(dag_id)}/dagRuns", body)
        return str(run["dag_run_id"])

    def run_state(self, dag_id: str, run_id: str) -> str:
        run = self.api("GET", f"dags/{quote(dag_id)}/dagRuns/{quote(run_id, safe='')}")
        return str(run["state"])

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 300) -> str:
        """Wait until the run is finished; returns ``success`` or ``failed``. A question the API
        server leaves unanswered (30 s: a loaded machine) is asked again until the deadline.

        Raises ``TimeoutError`` (naming the run and its last state) after ``timeout`` seconds,
        or the provider's ``AirflowApiError`` when the server is still unreachable then.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                state: str | None = self.run_state(dag_id, run_id)
            except ApiUnreachable:
                if time.monotonic() > deadline:
                    raise
                state = None
            if state in FINISHED_STATES:
                return str(state)
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {dag_id}/{run_id} still {state} after {timeout:.0f} s")
            time.sleep(POLL_S)

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        """``task_id`` (``task_id[map_index]`` for mapped ones) -> state, for every task of the run."""
        path = f"dags/{quote(dag_id)}/dagRuns/{quote(run_id, safe='')}/taskInstances?limit=1000"
        states: dict[str, str | None] = {}
        for ti in self.api("GET", path)["task_instances"]:
            key = ti["task_id"] if ti["map_index"] < 0 else f"{ti['task_id']}[{ti['map_index']}]"
            states[key] = ti["state"]
        return states
