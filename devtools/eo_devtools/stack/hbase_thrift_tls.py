"""HBaseThriftTlsPart: the stack's HBase side of ``eo-stack up --tls``, a second Thrift1 server
in HBase's HTTP mode with TLS (HTTPS), against the stack's HBase.

HBase's Thrift1 server serves TLS only in its HTTP mode (``hbase.regionserver.thrift.http``:
a Jetty server whose servlet at ``/*`` takes the binary protocol); its socket mode has none.
This JVM's configuration is ``<state>/hbase/tls-conf/hbase-site.xml`` (directory mode 700, file
mode 600): the stack's client site (``<state>/hbase/conf/hbase-site.xml``) plus
``hbase.thrift.ssl.*``, naming the PKCS12 keystore ``<state>/hbase/tls-conf/thrift.p12`` (mode
600) built with ``cryptography`` from the stack PKI's server certificate and key, and its
random password, kept only in that file (never on a command line). The port is recorded in
``stack.json`` under :data:`THRIFT_TLS_PORT_KEY` (forgotten when the part stops). Healthy: a
real ``getTableNames`` over HTTPS verifying the stack's CA and host name.
"""

from __future__ import annotations

import json
import secrets
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from eo_devtools.stack.hbase import HBaseThriftService, site_xml
from eo_devtools.stack.hbase_layout import hbase_home
from eo_devtools.stack.pki import Pki, stack_pki
from eo_devtools.stack.ports import LOOPBACK, accepts_connections
from eo_devtools.stack.stack_part import StackPart

THRIFT_TLS_PORT_KEY = "hbase-thrift-https"
PASSWORD_KEY = "hbase.thrift.ssl.keystore.password"


def tls_conf_dir(state_dir: Path) -> Path:
    return hbase_home(state_dir) / "tls-conf"


def _read_site(path: Path) -> dict[str, str]:
    """The properties of an ``hbase-site.xml``."""
    root = ElementTree.parse(path).getroot()
    return {
        prop.findtext("name", ""): prop.findtext("value", "")
        for prop in root.iter("property")
        if prop.findtext("name")
    }


def _write_private(path: Path, data: bytes) -> None:
    """``data`` in ``path``, mode 600 from its creation on."""
    path.unlink(missing_ok=True)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_bytes(data)


def _keystore(pki: Pki, password: str) -> bytes:
    """PKCS12 of the PKI's server key and certificate (with the CA), encrypted with ``password``."""
    key = serialization.load_pem_private_key(pki.server_key.read_bytes(), password=None)
    cert = x509.load_pem_x509_certificate(pki.server_cert.read_bytes())
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    return pkcs12.serialize_key_and_certificates(
        b"thrift",
        key,  # type: ignore[arg-type]
        cert,
        [ca],
        serialization.BestAvailableEncryption(password.encode()),
    )


class HBaseThriftTlsService(HBaseThriftService):
    """HBase's Thrift1 server over HTTPS on 127.0.0.1:``ports["hbase-thrift-https"]``."""

    name = "hbase-thrift-https"
    port_keys = (THRIFT_TLS_PORT_KEY,)
    heap = "384m"

    def __init__(self, state_dir: Path, ports: Mapping[str, int], pki: Pki) -> None:
        super().__init__(state_dir, ports)
        self.pki = pki

    @property
    def conf_dir(self) -> Path:
        return tls_conf_dir(self.state_dir)

    @property
    def site_file(self) -> Path:
        return self.conf_dir / "hbase-site.xml"

    @property
    def keystore(self) -> Path:
        return self.conf_dir / "thrift.p12"

    def config_dirs(self) -> list[Path]:
        return [self.conf_dir]

    def prepare(self) -> None:
        """The keystore (a new random password) and the site naming it, both mode 600."""
        self.conf_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.conf_dir.chmod(0o700)
        password = "thrift-" + secrets.token_urlsafe(24)
        _write_private(self.keystore, _keystore(self.pki, password))
        site = {
            **_read_site(hbase_home(self.state_dir) / "conf" / "hbase-site.xml"),
            "hbase.regionserver.thrift.http": "true",
            "hbase.thrift.ssl.enabled": "true",
            "hbase.thrift.ssl.keystore.store": str(self.keystore),
            "hbase.thrift.ssl.keystore.type": "PKCS12",
            PASSWORD_KEY: password,
            "hbase.thrift.ssl.keystore.keypassword": password,
        }
        _write_private(self.site_file, site_xml(site).encode())

    def security(self) -> dict[str, Any]:
        """The connection's ``extra`` security keys: HTTPS trusting the stack's CA."""
        return {"transport": "http", "ssl": True, "ssl_ca": str(self.pki.ca)}

    def healthy(self) -> bool:
        """``getTableNames`` answers over HTTPS (the stack's CA, host name checked)."""
        if not accepts_connections(self.port):
            return False
        from airflow_provider_eo.clients.hbase_security import HBaseSecurity
        from airflow_provider_eo.clients.hbase_thrift import hbase_connection

        security = HBaseSecurity(ssl=True, ssl_ca=str(self.pki.ca), http=True).to_dict()
        kwargs = {"host": LOOPBACK, "port": self.port, "timeout": 5000, "transport": "http"}
        try:
            connection = hbase_connection({**kwargs, "security": security}, conn_id=self.name)
            try:
                connection.tables()
            finally:
                connection.close()
        except Exception:
            return False
        return True


class HBaseThriftTlsPart(StackPart):
    """The HTTPS Thrift server of the stack in ``state_dir``."""

    port_keys = (THRIFT_TLS_PORT_KEY,)
    conn_var = "AIRFLOW_CONN_EO_HBASE_TLS"

    def service(self, ports: Mapping[str, int]) -> HBaseThriftTlsService:
        return HBaseThriftTlsService(self.state_dir, ports, stack_pki(self.state_dir))

    def services(self, ports: Mapping[str, int]) -> tuple[HBaseThriftTlsService]:
        return (self.service(ports),)

    def status(self, recorded: Mapping[str, int]) -> dict[str, dict[str, Any]]:
        """The server's status entry, with its ``url``."""
        url = f"https://{LOOPBACK}:{self.service(recorded).port}/"
        return {name: {**entry, "url": url} for name, entry in super().status(recorded).items()}

    def connection(self, recorded: Mapping[str, int]) -> str:
        """``eo_hbase_tls``: Thrift over HTTPS trusting the stack's CA (no secret in it)."""
        service = self.service(recorded)
        return json.dumps(
            {"conn_type": "hbase", "host": LOOPBACK, "port": service.port, "extra": service.security()}
        )
