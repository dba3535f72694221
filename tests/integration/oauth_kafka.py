"""A private Kafka broker with a SASL_SSL/OAUTHBEARER listener and its OAuth issuer, for the
OAUTHBEARER tests (the real token flow: librdkafka's OIDC client credentials -> the issuer's
token endpoint over TLS -> the broker validating the ES256 JWT against the issuer's JWKS)."""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient

from eo_devtools.stack.kafka_oauth import OAUTH_PORT_KEY, OAuthKafkaService, oauth_client_config
from eo_devtools.stack.oauth_issuer import OAuthIssuer
from eo_devtools.stack.pki import make_pki
from eo_devtools.stack.ports import find_free_port
from eo_devtools.stack.process import read_pid, stop_process_group
from eo_devtools.stack.service_process import start_service
from tests.conftest import new_stack_dir
from tests.faults.harness import KAFKA_TEST_EXTRA

CLIENT_ID = "eo-writer"


@dataclass
class OAuthKafka:
    """The running broker and issuer; ``client_config`` logs in as :data:`CLIENT_ID`."""

    service: OAuthKafkaService
    issuer: OAuthIssuer
    client_secret: str
    client_config: dict[str, str]

    @property
    def plaintext(self) -> str:
        """The broker's PLAINTEXT listener (the test's own admin and producer)."""
        return self.service.bootstrap_servers

    def conn_json(self, **overrides: str) -> str:
        """An ``eo_kafka`` connection (JSON) of the OAUTHBEARER listener, ``overrides`` applied."""
        return json.dumps(
            {"conn_type": "kafka", "extra": {**self.client_config, **KAFKA_TEST_EXTRA, **overrides}}
        )


@contextlib.contextmanager
def oauth_kafka() -> Iterator[OAuthKafka]:
    """Start the issuer (a thread of this process) and the broker (free ports, a fresh state
    dir and PKI); both are stopped and the dir removed when the block exits."""
    state_dir = new_stack_dir("eo-oauth-kafka-")
    pki = make_pki(state_dir / "pki")
    secret = "oidc-" + secrets.token_urlsafe(18)
    issuer = OAuthIssuer(find_free_port(), {CLIENT_ID: secret}, pki.server_cert, pki.server_key).start()
    keys = (*OAuthKafkaService.port_keys, OAUTH_PORT_KEY)
    ports = {key: find_free_port() for key in keys}
    while len(set(ports.values())) < len(ports):
        ports = {key: find_free_port() for key in keys}
    service = OAuthKafkaService(state_dir, ports, pki, issuer.jwks_url)
    service.preflight()
    try:
        start_service(service)
        config = oauth_client_config(service.oauth_bootstrap, pki.ca, issuer.token_url, CLIENT_ID, secret)
        yield OAuthKafka(service, issuer, secret, config)
    finally:
        started = read_pid(service.pid_path)
        if started is not None:
            stop_process_group(started, grace_s=service.stop_grace_s)
        issuer.stop()
        shutil.rmtree(state_dir, ignore_errors=True)


def list_topics(config: dict[str, Any]) -> set[str]:
    """Topic names through a client of ``config`` (raises librdkafka's error)."""
    return set(AdminClient(config).list_topics(timeout=20).topics)
