"""KafkaOAuthPart: the stack's Kafka side of ``eo-stack up --tls``, an OAuth issuer and a Kafka
node whose SASL_SSL listener takes OAUTHBEARER only (:mod:`.oauth_issuer`, :mod:`.kafka_oauth`).

Both run as the stack's processes (pids in ``pids/``, logs in ``logs/``) with ports recorded in
``stack.json`` under :data:`OAUTH_PORT_KEYS`; a stopped part's ports are forgotten. The
certificates are the stack PKI's (``<state_dir>/pki``). The pipeline's OAuth client
(:data:`CLIENT_ID`) and its secret are made once and kept in ``<state_dir>/oauth/clients.json``
(mode 600): the issuer reads them from there, never from its command line. The node is a broker
of its own beside the stack's Kafka (its PLAINTEXT listener serves the tests' admin and producers).
"""

from __future__ import annotations

import json
import secrets
import ssl
import sys
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from eo_devtools.stack.kafka_oauth import OAUTH_PORT_KEY, OAuthKafkaService, oauth_client_config
from eo_devtools.stack.pki import Pki, stack_pki
from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.service import Service
from eo_devtools.stack.stack_part import StackPart

ISSUER_PORT_KEY = "oauth-issuer"
OAUTH_PORT_KEYS = (ISSUER_PORT_KEY, *OAuthKafkaService.port_keys, OAUTH_PORT_KEY)
CLIENT_ID = "eo-writer"


class OAuthIssuerService(Service):
    """``python -m eo_devtools.stack.oauth_issuer`` on ``ports["oauth-issuer"]``."""

    name = "oauth-issuer"
    port_keys = (ISSUER_PORT_KEY,)

    def __init__(self, state_dir: Path, ports: Mapping[str, int], pki: Pki) -> None:
        super().__init__(state_dir, ports)
        self.pki = pki

    @property
    def clients_file(self) -> Path:
        return self.state_dir / "oauth" / "clients.json"

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}"

    def prepare(self) -> None:
        """The client's secret, made once (mode 600)."""
        if not self.clients_file.exists():
            self.clients_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.clients_file.touch(mode=0o600)
            self.clients_file.write_text(json.dumps({CLIENT_ID: "oidc-" + secrets.token_urlsafe(24)}))

    def client_secret(self) -> str:
        return str(json.loads(self.clients_file.read_text())[CLIENT_ID])

    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "eo_devtools.stack.oauth_issuer", "--port", str(self.port),
            "--cert", str(self.pki.server_cert), "--key", str(self.pki.server_key),
            "--clients", str(self.clients_file),
        ]  # fmt: skip

    def healthy(self) -> bool:
        """The JWKS answers over TLS, trusting the stack's CA."""
        context = ssl.create_default_context(cafile=str(self.pki.ca))
        try:
            with urllib.request.urlopen(f"{self.url}/jwks", timeout=3, context=context) as answer:
                return bool(json.loads(answer.read())["keys"])
        except (OSError, ValueError, KeyError):
            return False


class KafkaOAuthPart(StackPart):
    """The issuer and the OAUTHBEARER node of the stack in ``state_dir``."""

    port_keys = OAUTH_PORT_KEYS
    conn_var = "AIRFLOW_CONN_EO_KAFKA_OAUTH"

    def services(self, ports: Mapping[str, int]) -> tuple[OAuthIssuerService, OAuthKafkaService]:
        """The issuer, then the node, in start order."""
        pki = stack_pki(self.state_dir)
        issuer = OAuthIssuerService(self.state_dir, ports, pki)
        return issuer, OAuthKafkaService(self.state_dir, ports, pki, f"{issuer.url}/jwks")

    def connection(self, recorded: Mapping[str, int]) -> str:
        """``eo_kafka_oauth``: the node's OAUTHBEARER listener, OIDC client credentials (holds
        the client secret: never log it)."""
        issuer, node = self.services(recorded)
        config = oauth_client_config(
            node.oauth_bootstrap, issuer.pki.ca, f"{issuer.url}/token", CLIENT_ID, issuer.client_secret()
        )
        return json.dumps({"conn_type": "kafka", "extra": config})
