"""RegistryTlsPart: the stack's registry side of ``eo-stack up --tls``, the HTTPS, basic-auth
proxy (:mod:`.registry_tls_proxy`) in front of the stack's plain registry.

It runs as a stack process (pid in ``pids/``, log in ``logs/``) on the port recorded in
``stack.json`` under :data:`TLS_PORT_KEY` (forgotten when the part stops), with the stack PKI's
server certificate (``<state_dir>/pki``). The user (:data:`USER`) and its password are made once
and kept in ``<state_dir>/schema-registry-tls/users.json`` (mode 600): the proxy reads them from
there, never from its command line. The TLS and the password are the proxy's, as with an nginx
in front of a registry: Apicurio 2.x authenticates only through Keycloak.
"""

from __future__ import annotations

import base64
import json
import secrets
import ssl
import sys
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eo_devtools.stack.pki import Pki, stack_pki
from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.schema_registry import CCOMPAT_PATH
from eo_devtools.stack.service import Service
from eo_devtools.stack.stack_part import StackPart

TLS_PORT_KEY = "schema-registry-tls"
REGISTRY_PORT_KEY = "schema-registry"
USER = "eo-registry"


class RegistryTlsProxyService(Service):
    """``python -m eo_devtools.stack.registry_tls_proxy`` on ``ports["schema-registry-tls"]``
    forwarding to the registry on ``ports["schema-registry"]``."""

    name = "schema-registry-tls"
    port_keys = (TLS_PORT_KEY,)

    def __init__(self, state_dir: Path, ports: Mapping[str, int], pki: Pki) -> None:
        super().__init__(state_dir, ports)
        self.pki = pki
        self.upstream = f"http://{LOOPBACK}:{ports[REGISTRY_PORT_KEY]}"

    @property
    def users_file(self) -> Path:
        return self.state_dir / "schema-registry-tls" / "users.json"

    @property
    def url(self) -> str:
        """The Confluent-compatible API through the proxy."""
        return f"https://{LOOPBACK}:{self.port}{CCOMPAT_PATH}"

    def prepare(self) -> None:
        """The user's password, made once (mode 600)."""
        if not self.users_file.exists():
            self.users_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.users_file.touch(mode=0o600)
            self.users_file.write_text(
                json.dumps({"user": USER, "password": "reg-" + secrets.token_urlsafe(24)})
            )

    def password(self) -> str:
        return str(json.loads(self.users_file.read_text())["password"])

    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "eo_devtools.stack.registry_tls_proxy", "--port", str(self.port),
            "--upstream", self.upstream, "--cert", str(self.pki.server_cert),
            "--key", str(self.pki.server_key), "--users", str(self.users_file),
        ]  # fmt: skip

    def healthy(self) -> bool:
        """``GET /subjects`` answers a JSON list over TLS (the stack's CA) with the password."""
        context = ssl.create_default_context(cafile=str(self.pki.ca))
        try:
            token = base64.b64encode(f"{USER}:{self.password()}".encode()).decode()
            request = urllib.request.Request(
                f"{self.url}/subjects", headers={"Authorization": f"Basic {token}"}
            )
            with urllib.request.urlopen(request, timeout=3, context=context) as answer:
                return isinstance(json.loads(answer.read()), list)
        except (OSError, ValueError, KeyError):
            return False


class RegistryTlsPart(StackPart):
    """The registry proxy of the stack in ``state_dir``."""

    port_keys = (TLS_PORT_KEY,)
    conn_var = "AIRFLOW_CONN_SCHEMA_REGISTRY_TLS"

    def service(self, ports: Mapping[str, int]) -> RegistryTlsProxyService:
        return RegistryTlsProxyService(self.state_dir, ports, stack_pki(self.state_dir))

    def services(self, ports: Mapping[str, int]) -> tuple[RegistryTlsProxyService]:
        return (self.service(ports),)

    def status(self, recorded: Mapping[str, int]) -> dict[str, dict[str, Any]]:
        """The proxy's status entry, with its ``url``."""
        service = self.service(recorded)
        return {name: {**entry, "url": service.url} for name, entry in super().status(recorded).items()}

    def connection(self, recorded: Mapping[str, int]) -> str:
        """``schema_registry_tls``: https through the proxy, basic auth, the stack CA in
        ``extra["ssl.ca.location"]`` (holds the password: never log it)."""
        service = self.service(recorded)
        extra = {"url": service.url, "ssl.ca.location": str(service.pki.ca)}
        return json.dumps(
            {"conn_type": "http", "login": USER, "password": service.password(), "extra": extra}
        )
