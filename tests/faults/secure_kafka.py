"""A TLS (and SASL/SCRAM) Kafka endpoint for the security tests: a second Tansu behind a proxy.

Why a proxy: the Tansu 0.6.0 binary cannot serve TLS. Its ``broker --cert`` and ``--key``
flags sit in one clap argument group, so giving both is rejected ("the argument '--cert
<CERT>' cannot be used with '--key <KEY>'") while the broker only builds a TLS config
when it has both; with one of them it silently listens in plaintext. Its
``--authentication`` flag enables SASL with SCRAM-SHA-256/512 only (PLAIN is not offered),
checked against users in the broker's storage; with memory storage no user can ever be
created, because ``tansu user create`` (AlterUserScramCredentials) must itself
authenticate first.

So :class:`KafkaTlsProxy` terminates TLS (Python ``ssl``, a throwaway CA from
:func:`make_pki`) and, when it has users, performs the Kafka SASL exchange itself
(SaslHandshake v1 + SaslAuthenticate v0/v1, RFC 5802/7677 SCRAM-SHA-256/512 server with
stored keys only, as a Kafka broker does) before it forwards any other request. After
that it relays bytes to a private Tansu whose *advertised* listener is the proxy, so every
client connection (bootstrap and broker) goes through TLS: real librdkafka TLS and SASL.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import hashlib
import hmac
import ipaddress
import json
import os
import secrets
import ssl
import struct
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from airflow_provider_eo.demo.expected_state import ProducedRecord
from airflow_provider_eo.demo.sample_events import partition_for, sample_events
from airflow_provider_eo.devstack.broker import BrokerService
from airflow_provider_eo.devstack.ports import LOOPBACK, find_free_port
from airflow_provider_eo.devstack.process import start_process, stop_process_group, wait_until_healthy
from tests.faults.harness import KAFKA_TEST_EXTRA, Case, FaultStack, declare_pipeline, pipeline_entry

# -- a throwaway PKI ---------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    """PEM files: the test CA, an unrelated CA, and the server's certificate and key."""

    ca: Path
    other_ca: Path
    server_cert: Path
    server_key: Path


def _ca(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
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
    """A CA, a server certificate it signs for ``127.0.0.1``/``localhost``, and a second CA."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("eo security test CA")
    _, other_cert = _ca("eo unrelated CA")
    server_key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(LOOPBACK))]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_cert.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
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
    pki.other_ca.write_bytes(other_cert.public_bytes(serialization.Encoding.PEM))
    pki.server_cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    pki.server_key.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    pki.server_key.chmod(0o600)
    return pki


# -- SCRAM (RFC 5802 / RFC 7677), server side --------------------------------------------

SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SCRAM_ITERATIONS = 4096
SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34


@dataclass(frozen=True)
class ScramCredential:
    """What a broker stores for a SCRAM user (never the password)."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def create(cls, mechanism: str, password: str) -> ScramCredential:
        name = SCRAM_HASHES[mechanism]
        salt = os.urandom(16)
        salted = hashlib.pbkdf2_hmac(name, password.encode(), salt, SCRAM_ITERATIONS)
        client_key = hmac.digest(salted, b"Client Key", name)
        return cls(
            salt=salt,
            iterations=SCRAM_ITERATIONS,
            stored_key=hashlib.new(name, client_key).digest(),
            server_key=hmac.digest(salted, b"Server Key", name),
        )


class SaslFailure(Exception):
    """The SASL exchange failed; the message is what the client is told."""


def _attributes(text: str) -> dict[str, str]:
    return {part[0]: part[2:] for part in text.split(",") if len(part) >= 2 and part[1] == "="}


class ScramServer:
    """One SCRAM exchange: ``step(client message) -> server message``; ``user`` once done."""

    def __init__(self, mechanism: str, users: Mapping[str, Mapping[str, ScramCredential]]) -> None:
        self.mechanism = mechanism
        self.hash = SCRAM_HASHES[mechanism]
        self.users = users
        self.user: str | None = None
        self.done = False
        self._state: tuple[str, str, str, ScramCredential, str] | None = None

    def _fail(self) -> SaslFailure:
        return SaslFailure(
            "Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {self.mechanism}"
        )

    def step(self, message: bytes) -> bytes:
        text = message.decode("utf-8", errors="replace")
        if self._state is None:
            return self._first(text)
        return self._final(text)

    def _first(self, text: str) -> bytes:
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise SaslFailure("invalid SCRAM client-first message (channel binding not supported)")
        bare = parts[2]
        attrs = _attributes(bare)
        user = attrs.get("n", "").replace("=2C", ",").replace("=3D", "=")
        client_nonce = attrs.get("r", "")
        credential = self.users.get(user, {}).get(self.mechanism)
        if not client_nonce or credential is None:
            raise self._fail()
        nonce = client_nonce + base64.b64encode(os.urandom(18)).decode()
        server_first = f"r={nonce},s={base64.b64encode(credential.salt).decode()},i={credential.iterations}"
        gs2_header = f"{parts[0]},{parts[1]},"
        self._state = (user, bare, server_first, credential, gs2_header)
        return server_first.encode()

    def _final(self, text: str) -> bytes:
        assert self._state is not None
        user, client_first_bare, server_first, credential, gs2_header = self._state
        without_proof, _, proof_part = text.rpartition(",p=")
        attrs = _attributes(without_proof)
        nonce = _attributes(server_first)["r"]
        if attrs.get("r") != nonce or attrs.get("c") != base64.b64encode(gs2_header.encode()).decode():
            raise self._fail()
        auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
        signature = hmac.digest(credential.stored_key, auth_message, self.hash)
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise self._fail() from None
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if len(proof) != len(signature) or not hmac.compare_digest(
            hashlib.new(self.hash, client_key).digest(), credential.stored_key
        ):
            raise self._fail()
        self.user, self.done = user, True
        verifier = hmac.digest(credential.server_key, auth_message, self.hash)
        return b"v=" + base64.b64encode(verifier)


# -- the proxy ---------------------------------------------------------------------------


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


def _nullable_string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    data = value.encode()
    return struct.pack(">h", len(data)) + data


@dataclass
class ProxyStats:
    """What the proxy saw (read by the test thread; appended to by the proxy thread)."""

    tls_sessions: int = 0  # completed TLS handshakes
    authenticated: list[str] = field(default_factory=list)  # "user mechanism" per SASL login
    rejected: list[str] = field(default_factory=list)  # why a connection was refused after TLS


class KafkaTlsProxy:
    """TLS listener on 127.0.0.1 relaying to ``upstream``; SASL/SCRAM first when it has users.

    ``users``: user -> password; their SCRAM-SHA-256 and -512 credentials are derived at
    construction and only those are kept. Runs its own asyncio loop in a daemon thread;
    use as a context manager (or :meth:`start`/:meth:`stop`).
    """

    def __init__(
        self,
        upstream_port: int,
        pki: Pki,
        users: Mapping[str, str] | None = None,
    ) -> None:
        self.upstream_port = upstream_port
        self.pki = pki
        self.users: dict[str, dict[str, ScramCredential]] = {
            user: {mech: ScramCredential.create(mech, password) for mech in SCRAM_HASHES}
            for user, password in (users or {}).items()
        }
        self.sasl = users is not None
        self.stats = ProxyStats()
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kafka-tls-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def start(self) -> KafkaTlsProxy:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.pki.server_cert, self.pki.server_key)
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, LOOPBACK, 0, ssl=context, ssl_handshake_timeout=10),
            self._loop,
        )
        self._server = future.result(30)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
        self._loop.close()

    def __enter__(self) -> KafkaTlsProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.stats.tls_sessions += 1
        up_writer: asyncio.StreamWriter | None = None
        try:
            up_reader, up_writer = await asyncio.open_connection(LOOPBACK, self.upstream_port)
            if self.sasl and not await self._authenticate(reader, writer, up_reader, up_writer):
                return
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            for w in (writer, up_writer):
                if w is not None:
                    with contextlib.suppress(Exception):
                        w.close()

    async def _authenticate(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> bool:
        """The SASL phase of one connection; True once authenticated (the socket is then relayed)."""
        scram: ScramServer | None = None
        while True:
            request = await _read_frame(reader)
            api_key, version, correlation = struct.unpack(">hhi", request[:8])
            (client_id_len,) = struct.unpack(">h", request[8:10])
            body = request[10 + max(client_id_len, 0) :]
            if api_key == 18:  # ApiVersions: the broker's answer (it lists SaslHandshake/Authenticate)
                up_writer.write(_frame(request))
                writer.write(_frame(await _read_frame(up_reader)))
                await writer.drain()
            elif api_key == 17 and version == 1:  # SaslHandshake
                (length,) = struct.unpack(">h", body[:2])
                mechanism = body[2 : 2 + length].decode()
                offered = sorted(SCRAM_HASHES)
                error = 0 if mechanism in SCRAM_HASHES else UNSUPPORTED_SASL_MECHANISM
                payload = struct.pack(">ihi", correlation, error, len(offered))
                payload += b"".join(_nullable_string(m) for m in offered)
                writer.write(_frame(payload))
                await writer.drain()
                if error:
                    self.stats.rejected.append(f"unsupported mechanism {mechanism}")
                    return False
                scram = ScramServer(mechanism, self.users)
            elif api_key == 36 and version in (0, 1) and scram is not None:  # SaslAuthenticate
                (length,) = struct.unpack(">i", body[:4])
                try:
                    answer, error, message = scram.step(body[4 : 4 + length]), 0, None
                except SaslFailure as exc:
                    answer, error, message = b"", SASL_AUTHENTICATION_FAILED, str(exc)
                payload = struct.pack(">ih", correlation, error) + _nullable_string(message)
                payload += struct.pack(">i", len(answer)) + answer
                if version == 1:
                    payload += struct.pack(">q", 0)  # no session lifetime: no re-authentication
                writer.write(_frame(payload))
                await writer.drain()
                if error:
                    self.stats.rejected.append(str(message))
                    return False
                if scram.done:
                    self.stats.authenticated.append(f"{scram.user} {scram.mechanism}")
                    return True
            else:  # anything else before authentication: the connection is closed, as Kafka does
                self.stats.rejected.append(f"unauthenticated request api_key={api_key} v{version}")
                return False


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(Exception):
            writer.close()


# -- a second Tansu advertising the proxy --------------------------------------------------


class AdvertisedBroker(BrokerService):
    """Tansu listening on 127.0.0.1:``port`` but advertising ``advertised`` (the proxy)."""

    name = "broker-behind-tls"

    def __init__(self, state_dir: Path, port: int, advertised: str) -> None:
        super().__init__(state_dir, port)
        self.advertised = advertised

    def argv(self) -> list[str]:
        argv = super().argv()
        argv[argv.index("--advertised-listener-url") + 1] = f"tcp://{self.advertised}"
        return argv


@dataclass
class SecureKafka:
    """A running Tansu + proxy pair; ``client_config`` is what a client of it needs."""

    proxy: KafkaTlsProxy
    broker_pid: int
    broker_log: Path
    client_config: dict[str, str]

    @property
    def bootstrap(self) -> str:
        return self.proxy.bootstrap


@contextlib.contextmanager
def secure_kafka(state_dir: Path, pki: Pki, sasl: Mapping[str, str] | None = None) -> Iterator[SecureKafka]:
    """Start a private Tansu behind a TLS proxy (SASL/SCRAM too when ``sasl`` = {user: password},
    clients then log in as its first user with SCRAM-SHA-512); stopped afterwards."""
    broker_port = find_free_port()
    with KafkaTlsProxy(broker_port, pki, users=sasl) as proxy:
        service = AdvertisedBroker(state_dir, broker_port, proxy.bootstrap)
        (state_dir / "pids").mkdir(parents=True, exist_ok=True)
        pid = start_process(
            service.argv(),
            log_path=service.log_path,
            pid_path=service.pid_path,
            env=service.environment(),
            cwd=state_dir,
        )
        try:
            wait_until_healthy(service.name, pid, service.healthy, log_path=service.log_path, timeout_s=20)
            config = {
                "bootstrap.servers": proxy.bootstrap,
                "security.protocol": "SASL_SSL" if sasl else "SSL",
                "ssl.ca.location": str(pki.ca),
            }
            if sasl:
                user, password = next(iter(sasl.items()))
                config.update(
                    {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": password}
                )
            yield SecureKafka(proxy, pid, service.log_path, config)
        finally:
            stop_process_group(pid, grace_s=5.0)


# -- pipelines on the secure broker --------------------------------------------------------


def kafka_conn_json(
    client_config: Mapping[str, str], overrides: Mapping[str, str | None] | None = None
) -> str:
    """An ``eo_kafka`` connection (JSON) with ``client_config`` and the suite's short timeouts;
    ``overrides`` replace settings (``None`` removes one)."""
    extra: dict[str, Any] = {**client_config, **KAFKA_TEST_EXTRA}
    for key, value in (overrides or {}).items():
        if value is None:
            extra.pop(key, None)
        else:
            extra[key] = value
    return json.dumps({"conn_type": "kafka", "extra": extra})


class SecureStack(FaultStack):
    """The session's PostgreSQL and HBase with the secure broker as ``eo_kafka``."""

    def __init__(self, base: FaultStack, kafka: SecureKafka) -> None:
        self.state_dir = base.state_dir
        self.local = base.local
        self.kafka = kafka
        self.conn_env = {**base.conn_env, "AIRFLOW_CONN_EO_KAFKA": kafka_conn_json(kafka.client_config)}

    @property
    def bootstrap(self) -> str:
        return self.kafka.bootstrap

    def with_kafka_conn(self, value: str) -> dict[str, str]:
        """``conn_env`` with another ``eo_kafka`` value (for a negative control)."""
        return {**self.conn_env, "AIRFLOW_CONN_EO_KAFKA": value}


def produce(
    client_config: Mapping[str, str], topic: str, partitions: int, count: int, seed: int
) -> list[ProducedRecord]:
    """``sample_events`` produced one record per batch through ``client_config``; where each landed."""
    producer = Producer(
        {**client_config, "batch.num.messages": 1, "linger.ms": 0, "enable.idempotence": False}
    )
    produced: list[ProducedRecord] = []
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            produced.append(
                ProducedRecord(
                    msg.topic() or topic, msg.partition() or 0, msg.offset() or 0, msg.key(), msg.value()
                )
            )

    for key, value in sample_events(count, users=40, seed=seed):
        producer.produce(topic, key=key, value=value, partition=partition_for(key or b"", partitions),
                         on_delivery=on_delivery)  # fmt: skip
        producer.poll(0)
    remaining = producer.flush(60)
    assert not errors and not remaining, f"producing to {topic}: {errors[:3]}, {remaining} undelivered"
    return produced


def new_secure_case(
    stack: SecureStack, workdir: Path, tag: str, *, records: int, seed: int, partitions: int = 2
) -> Case:
    """Like ``harness.new_case`` (no cap), but topic and records go through the secure broker."""
    uid = uuid.uuid4().hex[:6]
    name = f"f_{tag}_{uid}"
    topic = f"eo-sec-{tag}-{uid}"
    spec, pipelines_file = declare_pipeline(stack, workdir, pipeline_entry(name, topics=[topic]))
    admin = AdminClient(dict(stack.kafka.client_config))
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    case = Case(stack, spec, pipelines_file, workdir, partitions=partitions)
    case.produced.extend(produce(stack.kafka.client_config, topic, partitions, records, seed))
    return case


def random_password() -> str:
    return "sasl-" + secrets.token_urlsafe(18)


# -- observing outputs -----------------------------------------------------------------------


@contextlib.contextmanager
def stderr_of_this_process() -> Iterator[Callable[[], str]]:
    """Capture file descriptor 2 (where librdkafka logs, from its own threads) for the block;
    yields a function returning what was written so far."""
    with tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)

        def text() -> str:
            sink.seek(0)
            return sink.read().decode(errors="replace")

        try:
            yield text
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
