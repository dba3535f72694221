"""RegistryTlsProxy: HTTPS with HTTP basic auth in front of the stack's plain-HTTP registry.

Apicurio Registry 2.x authenticates only through Keycloak, so the stack's ``--tls`` registry
is the plain one behind this proxy, as an nginx would front a registry in production: the
TLS and the password are the proxy's. Every request's method, path (with query), body and
``Content-Type``/``Accept`` go to ``upstream`` (``http://127.0.0.1:<port>``); the answer's
status, ``Content-Type`` and body come back. A request without the right ``Authorization:
Basic`` (compared in constant time) gets 401 with ``WWW-Authenticate: Basic realm="eo"`` and
is never forwarded. Nothing about a request is logged (its headers hold the password).
"""

from __future__ import annotations

import argparse
import base64
import hmac
import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.tls_http_server import TlsHttpServer

REALM = "eo"
FORWARDED_HEADERS = ("Content-Type", "Accept")


class RegistryTlsProxy:
    """The proxy on ``LOOPBACK:port`` to ``upstream`` for ``user``/``password``, TLS from
    ``cert``/``key`` (PEM). :meth:`start` serves in a daemon thread; :meth:`stop` ends it."""

    def __init__(self, port: int, upstream: str, user: str, password: str, cert: Path, key: Path) -> None:
        self.port = port
        self.upstream = upstream.rstrip("/")
        self._expected = b"Basic " + base64.b64encode(f"{user}:{password}".encode())
        self.refused = 0
        self._https = TlsHttpServer(port, cert, key)

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}"

    def authorized(self, authorization: str | None) -> bool:
        """Does the ``Authorization`` header carry the right user and password?"""
        return hmac.compare_digest(self._expected, (authorization or "").encode())

    def forward(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, str, bytes]:
        """``(status, content type, body)`` of the upstream's answer to the request."""
        request = urllib.request.Request(self.upstream + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.headers.get("Content-Type", ""), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Content-Type", ""), error.read()
        except OSError as error:
            return 502, "application/json", json.dumps({"error_code": 502, "message": str(error)}).encode()

    def start(self) -> RegistryTlsProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass  # nothing about a request is logged (its headers hold the password)

            def _answer(self, status: int, content_type: str, body: bytes, extra: dict[str, str]) -> None:
                self.send_response(status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if not proxy.authorized(self.headers.get("Authorization")):
                    proxy.refused += 1
                    message = json.dumps({"error_code": 401, "message": "Unauthorized"}).encode()
                    challenge = {"WWW-Authenticate": f'Basic realm="{REALM}"'}
                    self._answer(401, "application/json", message, challenge)
                    return
                headers = {name: value for name in FORWARDED_HEADERS if (value := self.headers.get(name))}
                self._answer(*proxy.forward(self.command, self.path, body, headers), {})

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self._https.serve(Handler, "registry-tls-proxy")
        return self

    def stop(self) -> None:
        self._https.stop()


def main(argv: list[str] | None = None) -> None:
    """``python -m eo_devtools.stack.registry_tls_proxy --port P --upstream URL --cert C --key K
    --users FILE``: serve until killed. ``FILE`` is JSON ``{"user": ..., "password": ...}``
    (mode 600): no password on the command line."""
    parser = argparse.ArgumentParser(prog="registry_tls_proxy")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--users", type=Path, required=True)
    args = parser.parse_args(argv)
    user = json.loads(args.users.read_text())
    RegistryTlsProxy(args.port, args.upstream, user["user"], user["password"], args.cert, args.key).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
