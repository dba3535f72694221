"""A stand-in for YARN's ResourceManager REST API, for unit tests of the write operator's
YARN paths with the fake ``spark-submit`` (no cluster: starting the real RM costs 6 s and
300 MB). It answers the calls the operator makes with the shapes Hadoop 3.5.0's RM gives
(captured from the stack's RM; the real one is exercised by
``tests/integration/test_yarn_cluster_mode.py`` and ``test_yarn_refusals.py``):

* ``GET /ws/v1/cluster/scheduler``: a Capacity Scheduler with the leaf ``root.default``
  (maximum allocation 4096 MB, 2 vcores);
* ``GET /ws/v1/cluster/apps?applicationTags=t``: the registered applications carrying ``t``;
* ``PUT /ws/v1/cluster/apps/<id>/state``: kills (the state becomes KILLED);
* ``POST /stand-in/apps`` (test only): registers an application, as the fake spark-submit
  does with the tags it was given.

With ``answering`` false, every ``/ws/v1`` call gets 503 (an RM restarting).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

SCHEDULER = {
    "scheduler": {
        "schedulerInfo": {
            "type": "capacityScheduler",
            "queueName": "root",
            "queuePath": "root",
            "maximumAllocation": {"memory": 4096, "vCores": 2},
            "queues": {
                "queue": [
                    {
                        "type": "capacitySchedulerLeafQueueInfo",
                        "queueName": "default",
                        "queuePath": "root.default",
                        "maximumAllocation": {"memory": 4096, "vCores": 2},
                    }
                ]
            },
        }
    }
}


@dataclass
class StandInResourceManager:
    """The stand-in's state: registered applications (RM JSON) and the ids it was asked to kill."""

    url: str = ""
    apps: list[dict[str, Any]] = field(default_factory=list)
    kills: list[str] = field(default_factory=list)
    answering: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, tags: list[str], **report: Any) -> dict[str, Any]:
        with self.lock:
            app = {
                "id": f"application_1_{len(self.apps) + 1:04d}",
                "name": "eo-write",
                "queue": "root.default",
                "state": "ACCEPTED",
                "finalStatus": "UNDEFINED",
                "diagnostics": "",
                **report,
                "applicationTags": ",".join(sorted(t.lower() for t in tags)),
            }
            self.apps.append(app)
            return app

    def tagged(self, tag: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(a) for a in self.apps if tag in a["applicationTags"].split(",")]

    def kill(self, app_id: str) -> dict[str, Any]:
        with self.lock:
            self.kills.append(app_id)
            for app in self.apps:
                if app["id"] == app_id and app["state"] not in ("FINISHED", "FAILED", "KILLED"):
                    app.update(
                        state="KILLED", finalStatus="KILLED", diagnostics="Application killed by user."
                    )
            return {"state": next((a["state"] for a in self.apps if a["id"] == app_id), "KILLED")}


def _handler(rm: StandInResourceManager) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, body: Any, status: int = 200) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

        def do_GET(self) -> None:
            url = urlparse(self.path)
            if not rm.answering:
                self._answer({"RemoteException": {"message": "restarting"}}, 503)
            elif url.path == "/ws/v1/cluster/scheduler":
                self._answer(SCHEDULER)
            elif url.path == "/ws/v1/cluster/apps":
                tag = parse_qs(url.query).get("applicationTags", [""])[0]
                apps = rm.tagged(tag)
                self._answer({"apps": {"app": apps} if apps else {}})
            else:
                self._answer({"RemoteException": {"message": "not found"}}, 404)

        def do_PUT(self) -> None:
            parts = urlparse(self.path).path.split("/")
            if not rm.answering:
                self._answer({"RemoteException": {"message": "restarting"}}, 503)
            elif parts[-1] == "state" and self._body().get("state") == "KILLED":
                self._answer(rm.kill(parts[-2]))
            else:
                self._answer({"RemoteException": {"message": "bad request"}}, 400)

        def do_POST(self) -> None:
            body = self._body()
            self._answer(rm.register(body.pop("tags"), **body))

    return Handler


@contextmanager
def stand_in_resource_manager() -> Iterator[StandInResourceManager]:
    """A running stand-in on a free loopback port (``url``), stopped when the block exits."""
    rm = StandInResourceManager()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rm))
    rm.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rm
    finally:
        server.shutdown()
        server.server_close()
