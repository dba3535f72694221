"""A loopback HTTPS server on a daemon thread: the shell of the stack's small TLS services
(the OAuth issuer, :mod:`.oauth_issuer`; the registry's proxy, :mod:`.registry_tls_proxy`).

It serves a ``BaseHTTPRequestHandler`` class with the PEM certificate and key it was given,
one thread per request. Its users keep their own request logic and logging rules.
"""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from eo_devtools.stack.ports import LOOPBACK


class TlsHttpServer:
    """HTTPS on ``LOOPBACK:port`` with ``cert``/``key``. Raises ``OSError``/``ssl.SSLError``
    from the constructor when the files cannot be loaded, and from :meth:`serve` when the port
    is taken."""

    def __init__(self, port: int, cert: Path, key: Path) -> None:
        self.port = port
        self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._tls.load_cert_chain(cert, key)
        self._server: ThreadingHTTPServer | None = None

    def serve(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        """Accept connections with ``handler`` in a daemon thread named ``name``."""
        server = ThreadingHTTPServer((LOOPBACK, self.port), handler)
        server.socket = self._tls.wrap_socket(server.socket, server_side=True)
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name=name, daemon=True).start()

    def stop(self) -> None:
        """Stop serving and close the socket (nothing when not serving)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
