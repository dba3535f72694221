"""A throwaway PKI for the local stack and the TLS tests: a CA (its key in ``ca.key``, mode 600),
a server certificate, an unrelated CA, client certificates (valid, expired, foreign-signed).

:func:`make_expired_pki` writes the same files with a server certificate that expired
yesterday (a client trusting its CA refuses it for the expiry alone)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from eo_devtools.stack.ports import LOOPBACK


@dataclass(frozen=True)
class Pki:
    """PEM files: the test CA, an unrelated CA, and the server's certificate and (PKCS#8,
    unencrypted, mode 600) key."""

    ca: Path
    other_ca: Path
    server_cert: Path
    server_key: Path


def _ca(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed P-256 CA certificate named ``name``, valid from 5 minutes ago for 2 days."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    usage = x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False,
    )  # fmt: skip
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(usage, critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def make_pki(directory: Path) -> Pki:
    """Write a CA, a server certificate it signs for ``127.0.0.1``/``localhost`` (with its
    key) and a second, unrelated CA into ``directory`` (created if missing)."""
    now = datetime.datetime.now(datetime.UTC)
    return _write_pki(directory, now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=2))


def make_expired_pki(directory: Path) -> Pki:
    """:func:`make_pki` with a server certificate valid from 3 days ago until yesterday."""
    now = datetime.datetime.now(datetime.UTC)
    return _write_pki(directory, now - datetime.timedelta(days=3), now - datetime.timedelta(days=1))


def _write_pki(directory: Path, not_before: datetime.datetime, not_after: datetime.datetime) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("eo security test CA")
    _, other_cert = _ca("eo unrelated CA")
    server_key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(LOOPBACK))]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_cert.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(
        ca=directory / "ca.pem",
        other_ca=directory / "other-ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
    )
    pki.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    ca_key_path = directory / "ca.key"  # signs client certificates (client_cert)
    ca_key_path.unlink(missing_ok=True)
    ca_key_path.touch(mode=0o600)
    ca_key_path.write_bytes(
        ca_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    pki.other_ca.write_bytes(other_cert.public_bytes(serialization.Encoding.PEM))
    pki.server_cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    pki.server_key.touch(mode=0o600)
    pki.server_key.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return pki


def stack_pki(state_dir: Path) -> Pki:
    """The stack's PKI in ``<state_dir>/pki``: made by the first caller, the same files afterwards."""
    directory = state_dir / "pki"
    pki = Pki(
        ca=directory / "ca.pem",
        other_ca=directory / "other-ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
    )
    every = (pki.ca, pki.other_ca, pki.server_cert, pki.server_key, directory / "ca.key")
    if all(path.exists() for path in every):
        return pki
    return make_pki(directory)


@dataclass(frozen=True)
class ClientCert:
    """A client certificate and its (PKCS#8, unencrypted, mode 600) key, PEM files."""

    cert: Path
    key: Path


def _load_ca(pki: Pki) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    ca_key = serialization.load_pem_private_key((pki.ca.parent / "ca.key").read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    return ca_key, x509.load_pem_x509_certificate(pki.ca.read_bytes())


def _write_client(
    directory: Path,
    stem: str,
    common_name: str,
    signer: tuple[ec.EllipticCurvePrivateKey, x509.Certificate],
    valid: tuple[datetime.datetime, datetime.datetime],
) -> ClientCert:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(signer[1].subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(signer[0], hashes.SHA256())
    )
    out = ClientCert(cert=directory / f"{stem}.pem", key=directory / f"{stem}.key")
    out.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    out.key.unlink(missing_ok=True)
    out.key.touch(mode=0o600)
    out.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return out


def client_cert(pki: Pki, common_name: str, *, stem: str | None = None) -> ClientCert:
    """A client certificate for ``common_name`` (e.g. a DB user) signed by ``pki``'s CA, valid
    for 2 days, written next to the CA as ``client-<common_name>.pem``/``.key``."""
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=2))
    return _write_client(pki.ca.parent, stem or f"client-{common_name}", common_name, _load_ca(pki), valid)


def expired_client_cert(pki: Pki, common_name: str) -> ClientCert:
    """Like :func:`client_cert`, but it expired a day ago (``expired-<common_name>.pem``)."""
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(days=3), now - datetime.timedelta(days=1))
    return _write_client(pki.ca.parent, f"expired-{common_name}", common_name, _load_ca(pki), valid)


def foreign_client_cert(pki: Pki, common_name: str) -> ClientCert:
    """A valid client certificate for ``common_name`` signed by a fresh CA the stack does
    not trust (``foreign-<common_name>.pem``)."""
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=2))
    return _write_client(pki.ca.parent, f"foreign-{common_name}", common_name, _ca("eo foreign CA"), valid)


def stack_client_cert(state_dir: Path, common_name: str) -> ClientCert:
    """The stack's client certificate for ``common_name``: made by the first caller, the same
    files afterwards."""
    pki = stack_pki(state_dir)
    existing = ClientCert(
        cert=pki.ca.parent / f"client-{common_name}.pem", key=pki.ca.parent / f"client-{common_name}.key"
    )
    if existing.cert.exists() and existing.key.exists():
        return existing
    return client_cert(pki, common_name)
