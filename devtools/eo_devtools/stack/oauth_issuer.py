"""A tiny OAuth 2 authorization server for the stack's OAUTHBEARER listener: a token endpoint
(``client_credentials`` grant) and the JWKS of its signing key, over TLS.

:class:`OAuthIssuer` serves ``POST /token`` and ``GET /jwks`` from Python's ``http.server`` with
the stack PKI's server certificate. A client authenticates with HTTP basic auth (RFC 6749 2.3.1:
what librdkafka's ``sasl.oauthbearer.method=oidc`` sends) or ``client_id``/``client_secret``
form fields, and gets an ES256-signed JWT (``sub`` = the client id, ``aud`` = :data:`AUDIENCE`,
``iss`` = the issuer's URL, ``exp`` in :data:`TOKEN_LIFETIME_S`) whose ``kid`` names the key the
JWKS publishes; a wrong or unknown client gets 401 ``{"error": "invalid_client"}`` and nothing
else. The signing key lives in memory only; client secrets are compared in constant time and
are never logged (the server logs nothing but the path and status). ``issued`` and ``refused``
count answers, so a test can see a token request happened.
"""

from __future__ import annotations

import argparse
import base64
import hmac
import json
import threading
import time
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.tls_http_server import TlsHttpServer

AUDIENCE = "kafka"
TOKEN_LIFETIME_S = 3600


class OAuthIssuer:
    """The authorization server on ``LOOPBACK:port`` with ``clients`` (id -> secret), TLS from
    ``cert``/``key`` (PEM). :meth:`start` serves in a daemon thread; :meth:`stop` ends it."""

    def __init__(self, port: int, clients: Mapping[str, str], cert: Path, key: Path) -> None:
        self.port = port
        self._clients = dict(clients)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.kid = uuid.uuid4().hex[:16]
        self.issued = 0
        self.refused = 0
        self._https = TlsHttpServer(port, cert, key)

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    def jwks(self) -> dict[str, object]:
        """The public signing key as a JWK set."""
        jwk = json.loads(ECAlgorithm.to_jwk(self._key.public_key()))
        return {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": "ES256"}]}

    def token(self, client_id: str) -> str:
        """A signed access token for ``client_id``."""
        now = int(time.time())
        claims = {
            "sub": client_id,
            "aud": AUDIENCE,
            "iss": self.url,
            "iat": now,
            "exp": now + TOKEN_LIFETIME_S,
        }
        return jwt.encode(claims, self._key, algorithm="ES256", headers={"kid": self.kid})

    def authenticate(self, authorization: str | None, form: Mapping[str, str]) -> str | None:
        """The client id if the request's credentials (basic auth, else form fields) are right."""
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        if authorization and authorization.lower().startswith("basic "):
            try:
                client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
            except ValueError:
                return None
        expected = self._clients.get(client_id)
        if expected is None or not hmac.compare_digest(expected.encode(), secret.encode()):
            return None
        return client_id

    def start(self) -> OAuthIssuer:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass  # nothing about a request is logged (its headers hold the secret)

            def _answer(self, status: int, body: Mapping[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/jwks":
                    self._answer(200, issuer.jwks())
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                fields = parse_qs(self.rfile.read(length).decode())
                form = {name: values[0] for name, values in fields.items()}
                if self.path != "/token":
                    self._answer(404, {"error": "not_found"})
                elif form.get("grant_type") != "client_credentials":
                    self._answer(400, {"error": "unsupported_grant_type"})
                elif (client := issuer.authenticate(self.headers.get("Authorization"), form)) is None:
                    issuer.refused += 1
                    self._answer(401, {"error": "invalid_client"})
                else:
                    issuer.issued += 1
                    token = issuer.token(client)
                    self._answer(
                        200, {"access_token": token, "token_type": "Bearer", "expires_in": TOKEN_LIFETIME_S}
                    )

        self._https.serve(Handler, "oauth-issuer")
        return self

    def stop(self) -> None:
        self._https.stop()


def main(argv: list[str] | None = None) -> None:
    """``python -m eo_devtools.stack.oauth_issuer --port P --cert C --key K --clients FILE``: serve
    until killed. ``FILE`` is JSON ``{client id: secret}`` (mode 600): no secret on the command line."""
    parser = argparse.ArgumentParser(prog="oauth_issuer")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--clients", type=Path, required=True)
    args = parser.parse_args(argv)
    clients = json.loads(args.clients.read_text())
    OAuthIssuer(args.port, clients, args.cert, args.key).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
