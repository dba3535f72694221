"""Apache Kafka with its own SSL and SASL_SSL (SCRAM-SHA-512) listeners, for the security tests.

:class:`SecureKafkaService` is the devstack's :class:`KafkaService` (one KRaft node) with two
more listeners next to PLAINTEXT: ``SSL`` (TLS only) and ``SASL_SSL`` (TLS, then SASL with
``SCRAM-SHA-512``), both serving the server certificate of a throwaway CA (:mod:`.pki`) from a
PEM keystore. :func:`secure_kafka` starts one in a private state dir, creates the SCRAM user
with the AdminClient over PLAINTEXT (the password is on no command line and in no file) and
stops it afterwards. The broker logs each authentication on its listener's network threads;
:class:`ListenerLog` reads them, so a test can count the TLS/SASL logins the broker accepted
and the reasons it gave for those it refused.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from eo_devtools.demo.expected_state import ProducedRecord
from eo_devtools.demo.sample_events import partition_for, sample_events
from eo_devtools.stack.kafka import KafkaService
from eo_devtools.stack.pki import Pki
from eo_devtools.stack.ports import LOOPBACK, find_free_port
from eo_devtools.stack.process import read_pid, stop_process_group
from eo_devtools.stack.service_process import start_service
from tests.faults.harness import KAFKA_TEST_EXTRA, Case, FaultStack, declare_pipeline, pipeline_entry
from tests.kafka_helpers import BATCHING_PRODUCER

SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_ITERATIONS = 8192
SASL_SSL = "SASL_SSL"


class SecureKafkaService(KafkaService):
    """:class:`KafkaService` with ``SSL`` and ``SASL_SSL`` (SCRAM-SHA-512) listeners next to
    PLAINTEXT (which stays the inter-broker listener; the SCRAM users are the caller's to
    create). The server certificate and key of ``pki`` form a PEM keystore (mode 600)."""

    name = "kafka-secure"
    tls_port_keys = ("kafka-ssl", "kafka-sasl-ssl")  # in ``ports`` next to ``port_keys``
    # The thread name (a network thread names its listener) and DEBUG for the selector,
    # which logs every connection it authenticated ("Successfully authenticated").
    log_pattern = "[%d] %p [%t] %m (%c)%n"
    logger_levels = {**KafkaService.logger_levels, "org.apache.kafka.common.network.Selector": "DEBUG"}

    def __init__(self, state_dir: Path, ports: Mapping[str, int], pki: Pki) -> None:
        super().__init__(state_dir, ports)
        self.pki = pki

    @property
    def keystore(self) -> Path:
        return self.home / "server-keystore.pem"

    def listeners(self) -> dict[str, tuple[str, int]]:
        return {
            **super().listeners(),
            "SSL": ("SSL", self.ports["kafka-ssl"]),
            SASL_SSL: (SASL_SSL, self.ports["kafka-sasl-ssl"]),
        }

    def server_properties(self) -> dict[str, str]:
        login_module = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        return {
            **super().server_properties(),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.keystore),
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"listener.name.sasl_ssl.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": login_module,
        }

    def prepare(self) -> None:
        """The keystore (key, then certificate), then the devstack's preparation."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.keystore.touch(mode=0o600)
        self.keystore.write_bytes(self.pki.server_key.read_bytes() + self.pki.server_cert.read_bytes())
        super().prepare()

    def bootstrap(self, listener: str) -> str:
        """``host:port`` of ``listener`` (``PLAINTEXT``, ``SSL`` or ``SASL_SSL``)."""
        return f"{LOOPBACK}:{self.listeners()[listener][1]}"


# -- what the broker logged about a listener's connections -----------------------------------


@dataclass(frozen=True)
class Authentications:
    """Connections of one listener the broker authenticated (``succeeded``), and the reason
    it logged for each one it refused (``failed``), in log order."""

    succeeded: int
    failed: list[str]


_FAILED = re.compile(r"Failed authentication with \S+ \(channelId=\S+\) \((?P<reason>.*)\) \(")


class ListenerLog:
    """The broker log lines of ``listener``'s network threads (named
    ``...kafka-network-thread-<node>-<listener>-<protocol>-<n>``). :meth:`mark` is a
    position in the log; :meth:`authentications` reads from one."""

    def __init__(self, log_path: Path, listener: str) -> None:
        self.log_path = log_path
        self._thread = re.compile(rf"\[\S*kafka-network-thread-\d+-{re.escape(listener)}-\w+-\d+\]")

    def mark(self) -> int:
        """The log's current end."""
        return self.log_path.stat().st_size

    def authentications(self, since: int = 0) -> Authentications:
        """What the listener's threads logged after ``since`` (a :meth:`mark`)."""
        with self.log_path.open("rb") as log:
            log.seek(since)
            text = log.read().decode(errors="replace")
        succeeded, failed = 0, []
        for line in text.splitlines():
            if not self._thread.search(line):
                continue
            if "Successfully authenticated with" in line:
                succeeded += 1
            elif match := _FAILED.search(line):
                failed.append(match["reason"])
        return Authentications(succeeded, failed)


# -- a running secure broker ----------------------------------------------------------------


@dataclass
class SecureKafka:
    """A running :class:`SecureKafkaService`.

    ``client_config``: the SASL_SSL listener, logged in as the SCRAM user (what the pipeline
    uses). ``tls_config``: the TLS-only listener (what the test's own admin and producers use,
    so the SASL_SSL listener serves only the pipeline). ``sasl_log``: its authentications.
    """

    service: SecureKafkaService
    pid: int
    client_config: dict[str, str]
    tls_config: dict[str, str]
    sasl_log: ListenerLog

    @property
    def bootstrap(self) -> str:
        return self.client_config["bootstrap.servers"]


def create_scram_user(bootstrap: str, user: str, password: str) -> None:
    """Create (or replace) ``user``'s SCRAM-SHA-512 credential through the AdminClient at
    ``bootstrap`` (PLAINTEXT; the password travels in the request only). Raises the
    broker's error, or after 30 s."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS)
    upsertion = UserScramCredentialUpsertion(user, info, password.encode())
    futures = admin.alter_user_scram_credentials([upsertion])
    assert isinstance(futures, dict), futures
    futures[user].result(30)


def wait_for_login(config: Mapping[str, str], timeout_s: float = 30) -> None:
    """Wait until a client with ``config`` lists topics (the broker applies a new SCRAM
    credential to its login cache shortly after describing it); AssertionError after
    ``timeout_s`` with the last error."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        quiet: dict[str, Any] = {**config, "logger": logging.getLogger("eo.tests.secure_kafka")}
        admin = AdminClient(quiet)
        try:
            admin.list_topics(timeout=5)
            return
        except Exception as exc:
            last = str(exc)
        time.sleep(0.5)
    raise AssertionError(f"no SASL_SSL login at {config['bootstrap.servers']} after {timeout_s}s: {last}")


@contextlib.contextmanager
def secure_kafka(state_dir: Path, pki: Pki, user: str, password: str) -> Iterator[SecureKafka]:
    """Start a :class:`SecureKafkaService` in ``state_dir`` (free ports), create SCRAM user
    ``user`` with ``password`` and yield it; the broker is stopped (its whole process group)
    when the block exits, also on error."""
    keys = (*SecureKafkaService.port_keys, *SecureKafkaService.tls_port_keys)
    ports = {key: find_free_port() for key in keys}
    while len(set(ports.values())) < len(ports):  # two free-port picks may coincide
        ports = {key: find_free_port() for key in keys}
    service = SecureKafkaService(state_dir, ports, pki)
    service.preflight()
    try:
        pid = start_service(service)
        create_scram_user(service.bootstrap("PLAINTEXT"), user, password)
        tls_config = {
            "bootstrap.servers": service.bootstrap("SSL"),
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca),
        }
        client_config = {
            **tls_config,
            "bootstrap.servers": service.bootstrap(SASL_SSL),
            "security.protocol": SASL_SSL,
            "sasl.mechanism": SCRAM_MECHANISM,
            "sasl.username": user,
            "sasl.password": password,
        }
        wait_for_login(client_config)
        yield SecureKafka(service, pid, client_config, tls_config, ListenerLog(service.log_path, SASL_SSL))
    finally:
        started = read_pid(service.pid_path)
        if started is not None:
            stop_process_group(started, grace_s=service.stop_grace_s)


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
    """The session's PostgreSQL and HBase with the secure broker's SASL_SSL listener as ``eo_kafka``."""

    def __init__(self, base: FaultStack, kafka: SecureKafka) -> None:
        self.state_dir = base.state_dir
        self.local = base.local
        self.kafka = kafka
        self.conn_env = {**base.conn_env, "AIRFLOW_CONN_EO_KAFKA": kafka_conn_json(kafka.client_config)}

    @property
    def bootstrap(self) -> str:
        return self.kafka.bootstrap


def produce(
    client_config: Mapping[str, str], topic: str, partitions: int, count: int, seed: int
) -> list[ProducedRecord]:
    """``sample_events`` produced (batched, as the tests' producers send) through
    ``client_config``; where each landed. AssertionError naming the topic if a delivery fails."""
    producer = Producer({**client_config, **BATCHING_PRODUCER})
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
    """Like ``harness.new_case`` (no cap), but topic and records go through the secure
    broker's TLS-only listener."""
    uid = uuid.uuid4().hex[:6]
    name = f"f_{tag}_{uid}"
    topic = f"eo-sec-{tag}-{uid}"
    spec, pipelines_file = declare_pipeline(stack, workdir, pipeline_entry(name, topics=[topic]))
    admin = AdminClient(dict(stack.kafka.tls_config))
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    case = Case(stack, spec, pipelines_file, workdir, partitions=partitions)
    case.produced.extend(produce(stack.kafka.tls_config, topic, partitions, records, seed))
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
