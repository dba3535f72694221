"""The secured stack end to end: one stream epoch and one backfill chunk through spark-submit
against the stack's secured services, the negative cases, and the secrets scan.

The secured stack is what ``eo-stack up --tls --kerberos`` adds to the stack: Kafka over
SASL_SSL with OAUTHBEARER (``eo_kafka_oauth``: the OAuth issuer's token endpoint over TLS, a
node of its own whose PLAINTEXT listener is the test's admin), the ledger over verify-full TLS
with a client certificate (``eo_ledger_tls``, role ``eo_tls``), the Schema Registry over HTTPS
with basic auth (``schema_registry_tls``) and the KDC of the realm ``EO.TEST`` (its keytabs).
HBase is the stack's Kerberized HBase (``eo_hbase_kerberos``: its Thrift server at SASL/GSSAPI
``auth-conf``, the pipeline logging in as ``eo-writer`` from its keytab), the one fixture
:func:`secured_hbase_fixture`; the test's own table set-up and reads go through it too.

The pipeline reads Confluent-framed Avro values whose schema was registered through the HTTPS
proxy. The epochs go the operators' way: ``ReserveEpochOperator`` -> ``WriteEpochOperator``
(spark-submit, ``local[2]``, client deploy mode, Spark's event log on) ->
``CommitEpochOperator``; then ``WriteBackfillChunkOperator`` (reserve + spark-submit) ->
``CommitEpochOperator``. Outcomes are exact: every HBase cell with its version (an offset:
``batch_size: 1`` makes each record its own segment, versioned by its own offset), the
ledger's epoch rows, the consumer group's offsets read over OAUTHBEARER.

The secrets (the OAuth client secret, the registry password, the ledger client key's PEM body,
every keytab's keys) appear in no command line seen during the runs, no task log (the
operators' log records and captured output, spark-submit's output in them), no Spark event
log, no rendered template field, and in the stack's state dir only in the files meant to hold
them, each mode 600.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import stat
import struct
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import happybase
import pytest
from airflow.sdk.exceptions import AirflowException
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs
from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.clients.hbase_thrift import hbase_connection
from airflow_provider_eo.config import PipelineSpec, load_pipeline
from airflow_provider_eo.formats.registry import RegistryRefused
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Epoch, EpochState, Ledger
from airflow_provider_eo.operators.backfill_chunks import WriteBackfillChunkOperator
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from airflow_provider_eo.operators.write import WriteEpochOperator
from eo_devtools.stack.kafka_oauth_part import ISSUER_PORT_KEY, KafkaOAuthPart
from eo_devtools.stack.kdc import KDC_PORT_KEY, Kdc
from eo_devtools.stack.pki import stack_client_cert, stack_pki
from eo_devtools.stack.postgres import TLS_ROLE
from eo_devtools.stack.registry_tls_part import TLS_PORT_KEY, USER, RegistryTlsPart
from eo_devtools.stack.stack import LocalStack
from tests.conftest import StackInfo
from tests.kafka_helpers import produce
from tests.kerberos_login import logout, restored_login
from tests.process_scan import SPARK_SUBMIT, CommandLineScanner
from tests.spark_startup import spark_conf
from tests.task_context import task_context

pytestmark = [pytest.mark.integration, pytest.mark.spark]

KAFKA_CONN = "eo_kafka_oauth"
LEDGER_CONN = "eo_ledger_tls"
REGISTRY_CONN = "schema_registry_tls"
PARTITIONS = 2
STREAM_COUNTS = [3, 2]  # records per partition before the stream epoch
LATER = 2  # records produced to partition 0 after it, written by the backfill chunk only
READING = {
    "type": "record",
    "name": "Reading",
    "namespace": "eo.secured",
    "fields": [{"name": "n", "type": "long"}, {"name": "label", "type": "string"}],
}
MAPPING = {"value_format": "avro", "key_format": "string", "columns": {"n": "n", "label": "label"}}


# -- the secured parts on the session's stack ------------------------------------------------
@dataclass(frozen=True)
class SecuredStack:
    """The stack with its secured parts running: every ``AIRFLOW_CONN_*`` value, the OAUTHBEARER
    node's PLAINTEXT bootstrap (admin, producers) and the secrets, by name."""

    state_dir: Path
    conn_env: dict[str, str]
    oauth_plaintext: str
    secrets: dict[str, list[bytes]]

    def secret_strings(self) -> list[str]:
        """Every secret's text forms (a command line or a log is text)."""
        text = [form for forms in self.secrets.values() for form in forms if form.isascii()]
        return [form.decode() for form in text if form.decode().isprintable()]


def keytab_keys(data: bytes) -> list[bytes]:
    """The key bytes of every entry of an MIT keytab (format 0x502: per entry its size, the
    principal's counted strings, name type, timestamp, kvno, then enctype and the counted key)."""
    assert data[:2] == b"\x05\x02", "not an MIT keytab of format 0x502"
    keys, pos = [], 2
    while pos + 4 <= len(data):
        (size,) = struct.unpack(">i", data[pos : pos + 4])
        pos += 4
        if size <= 0:  # a hole left by a removed entry
            pos += -size
            continue
        entry, pos = data[pos : pos + size], pos + size
        (components,) = struct.unpack(">H", entry[:2])
        at = 2
        for _ in range(components + 1):  # the realm, then each component
            (length,) = struct.unpack(">H", entry[at : at + 2])
            at += 2 + length
        at += 4 + 4 + 1 + 2  # name type, timestamp, kvno, enctype
        (length,) = struct.unpack(">H", entry[at : at + 2])
        keys.append(entry[at + 2 : at + 2 + length])
    return keys


def pem_body_lines(path: Path) -> list[bytes]:
    """The base64 lines of a PEM file's body (each long enough to be the key's alone)."""
    lines = path.read_bytes().splitlines()
    return [line for line in lines if not line.startswith(b"-----") and len(line) >= 40]


def stack_secrets(state_dir: Path, recorded: Mapping[str, int]) -> dict[str, list[bytes]]:
    """Name -> the forms to look for: the OAuth client secret, the registry password, the
    ledger client key's PEM body lines, and each keytab's keys raw, hex and base64."""
    issuer, _ = KafkaOAuthPart(state_dir).services(recorded)
    found = {
        "oauth client secret": [issuer.client_secret().encode()],
        "registry password": [RegistryTlsPart(state_dir).service(recorded).password().encode()],
        "ledger client key": pem_body_lines(stack_client_cert(state_dir, TLS_ROLE).key),
    }
    for keytab in sorted(Kdc(state_dir).keytab("x").parent.glob("*.keytab")):
        keys = keytab_keys(keytab.read_bytes())
        assert keys, keytab
        forms = [k for key in keys for k in (key, key.hex().encode(), base64.b64encode(key))]
        found[f"keytab {keytab.name}"] = forms
    return found


@pytest.fixture(scope="module")
def secured(stack: StackInfo) -> Iterator[SecuredStack]:
    """The ``--tls`` parts (OAuth issuer + OAUTHBEARER node, the registry's HTTPS proxy) and the
    KDC on the session's stack, as ``eo-stack up --tls --kerberos`` runs them; afterwards the
    parts this fixture started are stopped again (a stack already up with them keeps them)."""
    local = LocalStack(stack.state_dir)
    recorded = local._recorded_ports()
    had_tls = ISSUER_PORT_KEY in recorded and TLS_PORT_KEY in recorded
    had_kdc = KDC_PORT_KEY in recorded
    local.up(tls=True, kerberos=True)
    try:
        recorded = local._recorded_ports()
        _, node = KafkaOAuthPart(stack.state_dir).services(recorded)
        yield SecuredStack(
            state_dir=stack.state_dir,
            conn_env=local.conn_env(),
            oauth_plaintext=node.bootstrap_servers,
            secrets=stack_secrets(stack.state_dir, recorded),
        )
    finally:
        local.up(tls=None if had_tls else False, kerberos=None if had_kdc else False)
    parts = {ISSUER_PORT_KEY: had_tls, TLS_PORT_KEY: had_tls, KDC_PORT_KEY: had_kdc}
    assert {key: key in local._recorded_ports() for key in parts} == parts  # the stack as it was


@pytest.fixture(scope="module", name="secured_hbase")
def secured_hbase_fixture(secured: SecuredStack) -> tuple[str, str]:
    """The pipeline's HBase connection: (connection id, its ``AIRFLOW_CONN_*`` value)."""
    return "eo_hbase_kerberos", secured.conn_env["AIRFLOW_CONN_EO_HBASE_KERBEROS"]


@pytest.fixture(autouse=True)
def secured_env(
    secured: SecuredStack, secured_hbase: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Every connection of the secured stack in this process's environment, where Airflow
    resolves ``AIRFLOW_CONN_*`` (the write operator hands them on to spark-submit's); this
    process's Kerberos login (the test's own HBase reads) is undone afterwards."""
    for name, value in secured.conn_env.items():
        monkeypatch.setenv(name, value)
    conn_id, value = secured_hbase
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", value)
    with restored_login():
        yield


# -- the pipeline's world: topic, schema, records, table -------------------------------------
@dataclass
class World:
    """The topic on the OAUTHBEARER node, its schema id, the HBase table, the pipelines file."""

    secured: SecuredStack
    stack: StackInfo
    topic: str
    schema_id: int
    serializer: AvroSerializer
    tmp: Path
    hbase_conn_id: str
    hbase_conn: str  # its AIRFLOW_CONN_* value

    @contextlib.contextmanager
    def hbase(self) -> Iterator[happybase.Connection]:
        """A connection to the pipeline's HBase as the pipeline opens it (SASL/GSSAPI), for the
        test's own set-up and reads. Its Kerberos login (process-wide variables) is undone after:
        spark-submit inherits this process's environment, and with a ticket cache there libpq
        would try GSSAPI encryption to the ledger first."""
        found = json.loads(self.hbase_conn)
        target = EoConnection(
            self.hbase_conn_id, host=found["host"], port=found["port"], extra=found["extra"]
        )
        connection = hbase_connection(hbase_connection_kwargs(target), conn_id=self.hbase_conn_id)
        try:
            yield connection
        finally:
            connection.close()
            logout()

    def value(self, n: int, label: str) -> bytes:
        """A Confluent-framed Avro value (magic byte, the schema id, the Avro body)."""
        framed = self.serializer(
            {"n": n, "label": label}, SerializationContext(self.topic, MessageField.VALUE)
        )
        assert framed is not None and framed[:5] == b"\x00" + struct.pack(">I", self.schema_id)
        return bytes(framed)

    def produce(self, partition: int, offsets: range) -> None:
        """Records ``k<p>-<o>`` -> ``{"n": 10*p + o, "label": "r<p>.<o>"}`` at those offsets."""
        records = [
            (f"k{partition}-{o}", self.value(10 * partition + o, f"r{partition}.{o}")) for o in offsets
        ]
        produce(self.secured.oauth_plaintext, self.topic, records, partition=partition)

    def pipeline(self, event_log: Path, **entry: Any) -> tuple[str, PipelineSpec]:
        """A new pipeline (and its HBase table) over the topic; its spec with the suite's Spark
        start-up levers and Spark's event log (uncompressed) into ``event_log``."""
        name = f"sec_{uuid.uuid4().hex[:8]}"
        conf = {
            **spark_conf(),
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": event_log.as_uri(),
            "spark.eventLog.compress": "false",
        }
        full = {
            "name": name,
            "group_id": f"g-{name}",
            "topics": [self.topic],
            "hbase": {"table": name},
            "batch_size": 1,
            "mapping": MAPPING,
            "spark": {"master": "local[2]", "conf": conf},
            **entry,
        }
        file = self.tmp / f"{name}.yaml"
        file.write_text(json.dumps({"pipelines": [full]}))  # JSON is YAML
        with self.hbase() as hbase:
            hbase.create_table(name, {"d": {"max_versions": 3}})
        return name, load_pipeline(name, str(file))

    def cells(self, table: str) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
        """Every row's cells as (value, version)."""
        with self.hbase() as hbase:
            return dict(hbase.table(table).scan(include_timestamp=True))

    def drop(self, table: str) -> None:
        with self.hbase() as hbase:
            hbase.delete_table(table, disable=True)


def registry_client(secured: SecuredStack) -> SchemaRegistryClient:
    """A client of the registry through its HTTPS proxy: basic auth, the stack's CA."""
    extra = json.loads(secured.conn_env["AIRFLOW_CONN_SCHEMA_REGISTRY_TLS"])
    return SchemaRegistryClient(
        {
            "url": extra["extra"]["url"],
            "basic.auth.user.info": f"{USER}:{extra['password']}",
            "ssl.ca.location": extra["extra"]["ssl.ca.location"],
        }
    )


@pytest.fixture(scope="module")
def world(
    stack: StackInfo,
    secured: SecuredStack,
    secured_hbase: tuple[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[World]:
    """A 2-partition topic on the OAUTHBEARER node holding 3 + 2 Avro records, the value schema
    registered through the HTTPS proxy under ``<topic>-value``."""
    topic = f"eo-secured-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": secured.oauth_plaintext})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    client = registry_client(secured)
    subject = f"{topic}-value"
    schema_id = client.register_schema(subject, Schema(json.dumps(READING), "AVRO"))
    conf = {"auto.register.schemas": False, "use.latest.version": False}
    serializer = AvroSerializer(client, json.dumps(READING), conf=conf)
    built = World(
        secured, stack, topic, schema_id, serializer, tmp_path_factory.mktemp("secured"), *secured_hbase
    )
    for p, count in enumerate(STREAM_COUNTS):
        built.produce(p, range(count))
    try:
        yield built
    finally:
        client.delete_subject(subject)
        client.delete_subject(subject, permanent=True)
        client.close()
        admin.delete_topics([topic])[topic].result(30)


def expected_cells(partition: int, offsets: range) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
    """The cells of :meth:`World.produce`'s records: each at its own offset as its version."""
    return {
        f"k{partition}-{o}".encode(): {
            b"d:n": (str(10 * partition + o).encode(), o),
            b"d:label": (f"r{partition}.{o}".encode(), o),
        }
        for o in offsets
    }


# -- the operators ------------------------------------------------------------------------
CONNS = {"ledger_conn_id": LEDGER_CONN, "kafka_conn_id": KAFKA_CONN}


def reserve_op(spec: PipelineSpec) -> ReserveEpochOperator:
    return ReserveEpochOperator(task_id="reserve", pipeline=spec.name, spec=spec, **CONNS)


def write_op(spec: PipelineSpec, summary: Mapping[str, Any], hbase_conn_id: str) -> WriteEpochOperator:
    return WriteEpochOperator(
        task_id="write",
        pipeline=spec.name,
        epoch_id=summary["epoch_id"],
        fencing_token=summary["fencing_token"],
        spec=spec,
        hbase_conn_id=hbase_conn_id,
        schema_registry_conn_id=REGISTRY_CONN,
        **CONNS,
    )


def commit_op(spec: PipelineSpec, epoch_id: int) -> CommitEpochOperator:
    return CommitEpochOperator(task_id="commit", pipeline=spec.name, spec=spec, epoch_id=epoch_id, **CONNS)


def ranges_of(epoch: Epoch) -> list[tuple[str, int, int, int]]:
    return [(r.topic, r.partition, r.start, r.end) for r in epoch.ranges]


def group_offsets(world: World, spec: PipelineSpec) -> dict[tuple[str, int], int | None]:
    """The group's committed offsets, read over OAUTHBEARER (``eo_kafka_oauth``)."""
    tps = [(world.topic, p) for p in range(PARTITIONS)]
    return EoKafkaHook(KAFKA_CONN).committed_offsets(spec.group_id, tps)


def rendered_fields(op: Any, context: dict[str, Any]) -> dict[str, str]:
    """Each template field of ``op`` as Airflow renders it for the task (its Rendered page)."""
    op.render_template_fields(context)
    return {f"rendered {type(op).__name__}.{field}": repr(getattr(op, field)) for field in op.template_fields}


# -- where secrets could leak -----------------------------------------------------------------
def holding(secrets: Mapping[str, list[bytes]], places: Mapping[str, bytes]) -> dict[str, list[str]]:
    """Secret name -> the places (sorted) that contain any of its forms."""
    return {
        name: sorted(place for place, data in places.items() if any(form in data for form in forms))
        for name, forms in secrets.items()
    }


#: The parts of the state dir the secured parts and the services write (the base services'
#: data dirs hold the records, never a credential).
STATE_PARTS = ("logs", "pids", "pki", "oauth", "oauth-kafka", "schema-registry-tls", "kerberos", "secrets")


def state_files(state_dir: Path) -> dict[Path, bytes]:
    files = {state_dir / "stack.json": (state_dir / "stack.json").read_bytes()}
    for part in STATE_PARTS:
        for path in sorted((state_dir / part).rglob("*")):
            if path.is_file() and not path.is_symlink():
                files[path] = path.read_bytes()
    return files


def test_a_stream_epoch_and_a_backfill_chunk_through_spark_submit_on_the_secured_stack(
    world: World, stack: StackInfo, tmp_path: Path, caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Reserve -> spark-submit write -> commit of one stream epoch, then one backfill chunk
    (reserve + spark-submit write) -> commit, every connection the secured one: exact cells and
    versions, ledger rows and group offsets; then no secret in any place that could leak it."""
    caplog.set_level(logging.DEBUG)
    secured = world.secured
    event_log = tmp_path / "event-log"
    event_log.mkdir()
    name, spec = world.pipeline(event_log)
    topic = world.topic
    rendered: dict[str, str] = {}
    try:
        with CommandLineScanner(secured.secret_strings(), watch=name, watch_any_of=SPARK_SUBMIT) as scanner:
            context = task_context()
            summary = reserve_op(spec).execute(context)  # type: ignore[arg-type]
            assert [(r["topic"], r["partition"], r["start"], r["end"]) for r in summary["ranges"]] == [
                (topic, 0, 0, 3),
                (topic, 1, 0, 2),
            ]
            write = write_op(spec, summary, world.hbase_conn_id)
            write.execute(context)
            rendered |= rendered_fields(write, context)
            assert commit_op(spec, summary["epoch_id"]).execute(context)["state"] == "COMMITTED"  # type: ignore[arg-type]

            world.produce(0, range(3, 3 + LATER))  # offsets 3, 4: only the backfill chunk writes them
            chunk_context = task_context("bf-1", dag_id="eo_backfill")
            chunk = WriteBackfillChunkOperator(
                task_id="chunk.write",
                pipeline=name,
                ranges=[{"topic": topic, "partition": 0, "start": 1, "end": 3 + LATER}],
                spec=spec,
                hbase_conn_id=world.hbase_conn_id,
                schema_registry_conn_id=REGISTRY_CONN,
                **CONNS,
            )
            backfill = chunk.execute(chunk_context)
            rendered |= rendered_fields(chunk, chunk_context)
            assert (backfill["kind"], backfill["state"], backfill["records_total"]) == (
                "backfill",
                "WRITTEN",
                4,
            )
            committed = commit_op(spec, backfill["epoch_id"]).execute(chunk_context)  # type: ignore[arg-type]
            assert committed["state"] == "COMMITTED"
        outputs = capfd.readouterr()

        # HBase: every record's cells at its own offset; the chunk rewrote 1, 2 identically
        assert world.cells(name) == {
            **expected_cells(0, range(3 + LATER)),
            **expected_cells(1, range(STREAM_COUNTS[1])),
        }
        with Ledger(stack.ledger_dsn) as ledger:
            stream_epoch = ledger.get_epoch(summary["epoch_id"])
            backfill_epoch = ledger.get_epoch(backfill["epoch_id"])
            histories = {
                e: [(t.from_state, t.to_state) for t in ledger.history(e)]
                for e in (summary["epoch_id"], backfill["epoch_id"])
            }
        assert (stream_epoch.pipeline, stream_epoch.kind, stream_epoch.state) == (
            name,
            "stream",
            EpochState.COMMITTED,
        )
        assert ranges_of(stream_epoch) == [(topic, 0, 0, 3), (topic, 1, 0, 2)]
        stream_metrics = stream_epoch.metrics or {}
        assert (
            stream_metrics["records"],
            stream_metrics["cells_written"],
            stream_metrics["bad_records"],
        ) == (5, 10, 0)
        assert (stream_metrics["schema_ids"], stream_metrics["segments"]) == ([world.schema_id], 5)
        assert (backfill_epoch.kind, backfill_epoch.state, backfill_epoch.run_id) == (
            "backfill",
            EpochState.COMMITTED,
            "bf-1",
        )
        assert ranges_of(backfill_epoch) == [(topic, 0, 1, 5)]
        backfill_metrics = backfill_epoch.metrics or {}
        assert (backfill_metrics["records"], backfill_metrics["cells_written"]) == (4, 8)
        transitions = [(None, "RESERVED"), ("RESERVED", "WRITTEN"), ("WRITTEN", "COMMITTED")]
        assert histories == {summary["epoch_id"]: transitions, backfill["epoch_id"]: transitions}
        # the stream epoch's commit published its ends; the backfill moved nothing
        assert group_offsets(world, spec) == {(topic, 0): 3, (topic, 1): 2}

        # -- the secrets scan ------------------------------------------------------------
        assert scanner.leaks == [] and scanner.watched  # both spark-submits seen, no secret in any argv
        task_log = caplog.text + outputs.out + outputs.err
        for epoch_id in (summary["epoch_id"], backfill["epoch_id"]):  # both spark-submits' output is in it
            assert f"epoch_id={epoch_id}: voted WRITTEN" in task_log
        # Spark's event log: its SparkListenerEnvironmentUpdate event is the data of the Spark UI's
        # (and the History Server's) Environment page: Spark properties, system properties, the
        # JVM's, the classpath. The epochs run with spark.ui.enabled=false: the event is the page.
        event_logs = {path: path.read_bytes() for path in sorted(event_log.rglob("*")) if path.is_file()}
        events = [data for path, data in event_logs.items() if path.name.startswith("events_")]
        assert len(events) == 2 and all(b"SparkListenerEnvironmentUpdate" in data for data in events)
        files = state_files(secured.state_dir)
        places: dict[str, bytes] = {
            "task log (operators' records and output, spark-submit's output)": task_log.encode(),
            **{f"event log {path.name}": data for path, data in event_logs.items()},
            **{k: v.encode() for k, v in rendered.items()},
            **{f"state {path.relative_to(secured.state_dir)}": data for path, data in files.items()},
        }
        assert name in rendered["rendered WriteEpochOperator.application_args"]  # rendered, not empty
        expected_holders = {
            "oauth client secret": ["state oauth/clients.json"],
            "registry password": ["state schema-registry-tls/users.json"],
            "ledger client key": [f"state pki/client-{TLS_ROLE}.key"],
            **{
                name: [f"state kerberos/keytabs/{name.removeprefix('keytab ')}"]
                for name in secured.secrets
                if name.startswith("keytab ")
            },
        }
        assert holding(secured.secrets, places) == expected_holders
        # the files that hold secrets, and every key and keytab, are readable by their owner only
        private = [
            path
            for path in files
            if path.suffix in (".key", ".keytab")
            or path.name in ("clients.json", "users.json", "stash", "ledger_password")
        ]
        holders = {
            secured.state_dir / p.removeprefix("state ") for ps in expected_holders.values() for p in ps
        }
        assert holders <= set(private)
        assert {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in private} == {
            str(p): "0o600" for p in private
        }
    finally:
        world.drop(name)


def test_a_wrong_registry_password_and_a_wrong_ledger_ca_fail_the_write_and_change_nothing(
    world: World, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The write step of a reserved epoch, first with ``schema_registry_tls``'s password wrong:
    the operator's check of the mapping's fields is refused (401) before spark-submit; then with
    ``eo_ledger_tls`` trusting a CA that did not sign the ledger's server: spark-submit's driver
    fails at the ledger. Both errors name the connection; the epoch stays RESERVED with its
    history unchanged, the group has no offsets, the table no cell, and neither secret shows."""
    caplog.set_level(logging.DEBUG)
    secured = world.secured
    name, spec = world.pipeline(tmp_path_factory.mktemp("negative-event-log"))
    wrong = "wrong-" + uuid.uuid4().hex
    try:
        context = task_context()
        summary = reserve_op(spec).execute(context)  # type: ignore[arg-type]
        with Ledger(world.stack.ledger_dsn) as ledger:
            before = [(t.from_state, t.to_state) for t in ledger.history(summary["epoch_id"])]

        registry = json.loads(secured.conn_env["AIRFLOW_CONN_SCHEMA_REGISTRY_TLS"])
        monkeypatch.setenv("AIRFLOW_CONN_SCHEMA_REGISTRY_TLS", json.dumps({**registry, "password": wrong}))
        with pytest.raises(RegistryRefused) as refused:
            write_op(spec, summary, world.hbase_conn_id).execute(context)
        assert str(refused.value) == (
            f"Schema Registry {registry['extra']['url']} (connection {REGISTRY_CONN!r}) refused versions "
            f"of '{world.topic}-value': HTTP 401, error code 401: Unauthorized"
        )
        assert "Spark-Submit cmd" not in caplog.text  # refused before spark-submit
        registry_log = caplog.text + "".join(capfd.readouterr())
        monkeypatch.setenv(
            "AIRFLOW_CONN_SCHEMA_REGISTRY_TLS", secured.conn_env["AIRFLOW_CONN_SCHEMA_REGISTRY_TLS"]
        )
        caplog.clear()

        ledger_conn = json.loads(secured.conn_env["AIRFLOW_CONN_EO_LEDGER_TLS"])
        ledger_conn["extra"]["sslrootcert"] = str(stack_pki(secured.state_dir).other_ca)
        monkeypatch.setenv("AIRFLOW_CONN_EO_LEDGER_TLS", json.dumps(ledger_conn))
        with pytest.raises(AirflowException) as failed:  # the Spark provider's: spark-submit failed
            write_op(spec, summary, world.hbase_conn_id).execute(context)
        assert str(failed.value).startswith("Cannot execute: spark-submit --master local[2] ")
        task_log = caplog.text + "".join(capfd.readouterr())
        where = f"127.0.0.1:{ledger_conn['port']}/eo"
        port = ledger_conn["port"]
        assert (  # the driver's error, in spark-submit's output as the task logs it
            f"epoch_id={summary['epoch_id']}: write failed, epoch not voted: LedgerUnavailable: epoch ledger "
            f"unavailable at {where} of connection {LEDGER_CONN!r} (nothing was changed): connection to "
            f'server at "127.0.0.1", port {port} failed: SSL error: certificate verify failed'
        ) in task_log

        with Ledger(world.stack.ledger_dsn) as ledger:
            epoch = ledger.get_epoch(summary["epoch_id"])
            after = [(t.from_state, t.to_state) for t in ledger.history(summary["epoch_id"])]
        assert (epoch.state, after) == (EpochState.RESERVED, before)
        assert group_offsets(world, spec) == {(world.topic, p): None for p in range(PARTITIONS)}
        assert world.cells(name) == {}
        logs = {"task log": (registry_log + task_log).encode()}
        every = {**secured.secrets, "the wrong password": [wrong.encode()]}
        assert holding(every, logs) == {secret: [] for secret in every}
    finally:
        world.drop(name)
