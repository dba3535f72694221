"""``ResourceManager``: the YARN ResourceManager's REST API (``/ws/v1/cluster``), the calls
the write step makes in YARN deploy modes.

* :meth:`ResourceManager.applications_tagged`: the applications carrying a tag (the write
  step tags each submission, so it finds its application without parsing spark-submit's
  output); :meth:`ResourceManager.application`: one by id;
* :meth:`ResourceManager.kill`: ``PUT /apps/<id>/state {"state": "KILLED"}``;
* :meth:`ResourceManager.queues`: the scheduler's queues with their maximum allocation
  (``GET /scheduler``; Capacity and Fair schedulers; FIFO's single ``default`` queue).

Airflow-free (``requests``). The address is the Spark connection's
``yarn_resourcemanager_webapp_address`` (the Spark provider's own extra key): bare
``host:port`` gets ``http://``. ``auth`` is any ``requests`` auth (the provider's
``yarn_rm_auth``, e.g. SPNEGO on a Kerberized cluster); without it the RM sees its static
web user, enough where YARN's ACLs are off. Errors name ``where`` (the connection) and the
address: :class:`ResourceManagerUnavailable` when the RM does not answer or answers 5xx,
:class:`ResourceManagerRefused` for any other error answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from airflow_provider_eo.errors import ClusterAccessError

#: YARN application states after which nothing runs any more.
FINAL_STATES = frozenset({"FINISHED", "FAILED", "KILLED"})
#: (connect, read) timeouts of every call, seconds.
TIMEOUT_S = (5.0, 30.0)


class ResourceManagerUnavailable(ClusterAccessError, ConnectionError):
    """The ResourceManager could not be reached (refused, timed out) or answered 5xx."""


class ResourceManagerRefused(ClusterAccessError):
    """The ResourceManager answered a call with an error other than 5xx (401, 403, 404, ...)."""


@dataclass(frozen=True)
class YarnApplication:
    """One application as the RM reports it (``/ws/v1/cluster/apps`` fields)."""

    id: str
    name: str
    queue: str
    user: str
    state: str
    final_status: str
    diagnostics: str
    tags: tuple[str, ...]

    @property
    def finished(self) -> bool:
        """Whether the application has ended (FINISHED, FAILED or KILLED)."""
        return self.state in FINAL_STATES

    @property
    def succeeded(self) -> bool:
        """Whether it ended FINISHED with final status SUCCEEDED."""
        return self.state == "FINISHED" and self.final_status == "SUCCEEDED"

    @classmethod
    def from_json(cls, app: Mapping[str, Any]) -> YarnApplication:
        tags = str(app.get("applicationTags") or "")
        return cls(
            id=str(app["id"]),
            name=str(app.get("name", "")),
            queue=str(app.get("queue", "")),
            user=str(app.get("user", "")),
            state=str(app["state"]),
            final_status=str(app.get("finalStatus", "UNDEFINED")),
            diagnostics=str(app.get("diagnostics") or ""),
            tags=tuple(t for t in tags.split(",") if t),
        )


@dataclass(frozen=True)
class YarnQueue:
    """A scheduler queue: its full ``path`` (``root.a.b``), ``name`` (last part), whether
    applications can be submitted to it (``leaf``), and the largest container it grants
    (``maximum_allocation``: memory MB and vcores; None where the scheduler does not say)."""

    path: str
    name: str
    leaf: bool
    maximum_memory_mb: int | None
    maximum_vcores: int | None


class ResourceManager:
    """The RM REST API at ``address``; ``where`` names its configuration in errors.

    ``base_url`` is what calls go to; ``shown_url`` is what messages name: the same address
    without any ``user:password@`` part, so no error or log line carries a credential."""

    def __init__(self, address: str, *, where: str, auth: Any = None) -> None:
        address = address.strip()
        self.base_url = (address if "://" in address else f"http://{address}").rstrip("/")
        self.shown_url = without_userinfo(self.base_url)
        self.where = where
        self.auth = auth

    def applications_tagged(self, tag: str) -> list[YarnApplication]:
        """Every application (any state) carrying ``tag`` (YARN keeps tags lowercase)."""
        body = self._call("GET", "/ws/v1/cluster/apps", params={"applicationTags": tag.lower()})
        apps = (body.get("apps") or {}).get("app") or []
        return [YarnApplication.from_json(app) for app in apps]

    def application(self, app_id: str) -> YarnApplication:
        """The application ``app_id`` (``ResourceManagerRefused`` when the RM has none)."""
        return YarnApplication.from_json(self._call("GET", f"/ws/v1/cluster/apps/{app_id}")["app"])

    def kill(self, app_id: str) -> str:
        """Ask the RM to kill ``app_id``; returns the state it answers (``KILLED`` once done,
        the current state while the kill is under way, a final state if it had ended)."""
        body = self._call("PUT", f"/ws/v1/cluster/apps/{app_id}/state", json={"state": "KILLED"})
        return str(body.get("state", ""))

    def queues(self) -> list[YarnQueue]:
        """Every queue of the scheduler, parents first (``GET /ws/v1/cluster/scheduler``)."""
        info = self._call("GET", "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
        kind = info.get("type")
        if kind == "fairScheduler":
            return list(fair_queues(info["rootQueue"]))
        if kind == "fifoScheduler":
            return [YarnQueue("root.default", "default", True, None, None)]
        return list(capacity_queues(info, None))

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        what = f"{method} {path}"
        try:
            answer = requests.request(
                method,
                url,
                auth=self.auth,
                timeout=TIMEOUT_S,
                headers={"Accept": "application/json"},
                **kwargs,
            )
        except requests.RequestException as exc:
            raise ResourceManagerUnavailable(
                f"YARN ResourceManager {self.shown_url} ({self.where}) did not answer {what}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        if answer.status_code >= 500:
            raise ResourceManagerUnavailable(
                f"YARN ResourceManager {self.shown_url} ({self.where}) answered HTTP "
                f"{answer.status_code} to {what}: {answer.text[:300]}"
            )
        if answer.status_code >= 400:
            raise ResourceManagerRefused(
                f"YARN ResourceManager {self.shown_url} ({self.where}) refused {what}: HTTP "
                f"{answer.status_code}: {answer.text[:300]}"
            )
        try:
            body = answer.json()
        except ValueError:
            raise ResourceManagerRefused(
                f"YARN ResourceManager {self.shown_url} ({self.where}) answered {what} with no JSON: "
                f"{answer.text[:300]}"
            ) from None
        return body if isinstance(body, dict) else {}


def _allocation(queue: Mapping[str, Any], key: str) -> tuple[int | None, int | None]:
    allocation = queue.get(key) or {}
    memory, vcores = allocation.get("memory"), allocation.get("vCores")
    return (int(memory) if memory else None, int(vcores) if vcores else None)


def capacity_queues(queue: Mapping[str, Any], parent: str | None) -> Iterator[YarnQueue]:
    """The Capacity Scheduler's ``queue`` (its ``schedulerInfo`` for the root) and every queue
    under it, parents first; a queue without ``queuePath`` gets ``<parent path>.<name>``."""
    name = str(queue["queueName"])
    path = str(queue.get("queuePath") or (f"{parent}.{name}" if parent else name))
    children = (queue.get("queues") or {}).get("queue") or []
    yield YarnQueue(path, name, not children and parent is not None, *_allocation(queue, "maximumAllocation"))
    for child in children:
        yield from capacity_queues(child, path)


def fair_queues(queue: Mapping[str, Any]) -> Iterator[YarnQueue]:
    """The Fair Scheduler's ``queue`` and every queue under it (not exercised here: the stack
    runs the Capacity Scheduler)."""
    path = str(queue["queueName"])  # the Fair Scheduler names queues by their full path
    children = (queue.get("childQueues") or {}).get("queue") or []
    leaf = not children and path != "root"
    yield YarnQueue(path, path.rsplit(".", 1)[-1], leaf, *_allocation(queue, "maxContainerAllocation"))
    for child in children:
        yield from fair_queues(child)


def without_userinfo(url: str) -> str:
    """``url`` without its ``user:password@`` part (unchanged when it has none)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
