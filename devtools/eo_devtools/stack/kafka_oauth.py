"""Apache Kafka with a SASL_SSL listener whose one mechanism is OAUTHBEARER, validated against an
OAuth issuer's JWKS (:mod:`eo_devtools.stack.oauth_issuer`).

:class:`OAuthKafkaService` is the devstack's :class:`KafkaService` (PLAINTEXT stays the
inter-broker listener) plus ``SASL_SSL``: TLS with the stack PKI's server certificate (a PEM
keystore, mode 600), then SASL/OAUTHBEARER checked by Kafka's own
``OAuthBearerValidatorCallbackHandler``: the token's ES256 signature against the issuer's JWKS
(fetched over HTTPS, trusting the PKI's CA), its ``exp``, and ``aud`` = ``kafka``. Kafka 4 fetches
only URLs listed in the JVM's ``org.apache.kafka.sasl.oauthbearer.allowed.urls``: the JWKS's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from eo_devtools.stack.java_service import JavaService
from eo_devtools.stack.kafka import KafkaService
from eo_devtools.stack.oauth_issuer import AUDIENCE
from eo_devtools.stack.pki import Pki
from eo_devtools.stack.ports import LOOPBACK

OAUTH_LISTENER = "SASL_SSL"
OAUTH_PORT_KEY = "kafka-oauth"
VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


class OAuthKafkaService(KafkaService):
    """:class:`KafkaService` with a SASL_SSL/OAUTHBEARER listener on ``ports["kafka-oauth"]``."""

    name = "kafka-oauth"
    port_keys = ("kafka-oauth-plain", "kafka-oauth-controller")  # beside the stack's own Kafka

    def __init__(self, state_dir: Path, ports: Mapping[str, int], pki: Pki, jwks_url: str) -> None:
        super().__init__(state_dir, ports)
        self.pki = pki
        self.jwks_url = jwks_url

    @property
    def home(self) -> Path:
        """Its own directory, beside the stack's Kafka nodes' (not matched by their ``kafka*``)."""
        return self.state_dir / "oauth-kafka"

    def preflight(self) -> None:
        """The JVM and jars (a node of its own: the stack's cluster size is not its business)."""
        JavaService.preflight(self)

    @property
    def keystore(self) -> Path:
        return self.home / "server-keystore.pem"

    @property
    def oauth_bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.ports[OAUTH_PORT_KEY]}"

    def listeners(self) -> dict[str, tuple[str, int]]:
        return {**super().listeners(), OAUTH_LISTENER: ("SASL_SSL", self.ports[OAUTH_PORT_KEY])}

    def server_properties(self) -> dict[str, str]:
        prefix = f"listener.name.{OAUTH_LISTENER.lower()}.oauthbearer."
        # the broker's own login (never used: PLAINTEXT is inter-broker) needs a subject; the
        # JWKS is fetched over HTTPS trusting the stack's CA (PEM)
        options = (
            'unsecuredLoginStringClaim_sub="broker" '
            f'ssl.truststore.type="PEM" ssl.truststore.location="{self.pki.ca}"'
        )
        return {
            **super().server_properties(),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.keystore),
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            f"{prefix}sasl.jaas.config": f"{LOGIN_MODULE} required {options};",
            f"{prefix}sasl.server.callback.handler.class": VALIDATOR,
            "sasl.oauthbearer.jwks.endpoint.url": self.jwks_url,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
        }

    def jvm_options(self) -> list[str]:
        return [*super().jvm_options(), f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={self.jwks_url}"]

    def prepare(self) -> None:
        """The keystore (key, then certificate), then the devstack's preparation."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.keystore.touch(mode=0o600)
        self.keystore.write_bytes(self.pki.server_key.read_bytes() + self.pki.server_cert.read_bytes())
        super().prepare()


def oauth_client_config(
    bootstrap: str, ca: Path, token_url: str, client_id: str, client_secret: str
) -> dict[str, str]:
    """librdkafka settings of a client of that listener: OIDC client credentials against
    ``token_url`` (TLS trusting ``ca`` for the broker and the token endpoint)."""
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(ca),
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": client_id,
        "sasl.oauthbearer.client.secret": client_secret,
        "sasl.oauthbearer.token.endpoint.url": token_url,
        "https.ca.location": str(ca),
    }
