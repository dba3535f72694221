"""Session mode (``spark.mode: session``) on a real Spark Connect server (the stack's, started for
this module when the reused stack has none): real Kafka, HBase, PostgreSQL.

One two-partition topic, one pipeline whose ``bad_records`` dead-letters records over 64 bytes::

    p0: 0 k0 {"i": 0}   1 k1 big (dead letter)   2 k0 {"i": 2}
    p1: 0 k2 {"i": 10}  1 k2 {"i": 11}

The stream epoch goes through ``ReserveEpochOperator``, ``SessionWriteEpochOperator`` (the stream
DAG's write in session mode: no spark-submit) and ``CommitEpochOperator``; then a backfill chunk
over ``p0[0, 3)`` and the replay of the dead letter under the fixed spec run as session jobs
through the same driver code. Every check is exact: HBase cells with their offset versions, the
ledger's epochs and dead letters, the group's offsets. The secrets test looks for the ledger's
password where another pipeline's job on the same server could read it; the kill test interrupts a
try's job by its tag (``on_kill``) while its task waits on a Kafka that never answers, and
recovery settles the epoch.
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import happybase
import pytest
import yaml
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.ledger import Epoch, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.protocol import EpochProtocol, Reserved
from airflow_provider_eo.operators.backfill_chunks import WriteBackfillChunkOperator
from airflow_provider_eo.operators.backfill_request_form import request_of
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from airflow_provider_eo.operators.session_write import SessionWriteFailed
from airflow_provider_eo.operators.session_write_operator import SessionWriteEpochOperator
from airflow_provider_eo.spark.driver.task_runner import TaskFailed
from airflow_provider_eo.spark.driver.task_settings import task_settings
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.session.connect_tasks import SessionTasks
from airflow_provider_eo.spark.session.executor_package import PackageIdentity, client_identity
from airflow_provider_eo.spark.session.session_write import open_session
from eo_devtools.stack.spark_connect import connect_url, spark_connect_connection
from eo_devtools.stack.stack import LocalStack
from tests.conftest import StackInfo
from tests.integration.dead_letter_support import dead_letter_rows
from tests.integration.epoch_round_trip import (
    EpochRoundTrip,
    EpochRow,
    epoch_row,
    kafka_connection,
    ledger_connection,
)
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import created_topic, produce
from tests.task_context import task_context

pytestmark = [pytest.mark.integration, pytest.mark.spark]

BIG = json.dumps({"i": 1, "pad": "x" * 80}).encode()
P0 = [(b"k0", b'{"i": 0}'), (b"k1", BIG), (b"k0", b'{"i": 2}')]
P1 = [(b"k2", b'{"i": 10}'), (b"k2", b'{"i": 11}')]
VersionedRows = dict[bytes, dict[bytes, list[tuple[bytes, int]]]]


@dataclass
class World:
    stack: StackInfo
    url: str
    dsn: str
    env: dict[str, str]
    topic: str
    table: str
    name: str
    folder: Path
    stream: dict[str, Any]
    log_start: int
    session_id: str  # the server-side session of the stream epoch's write


def declaration(name: str, topic: str, max_record_bytes: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "topics": [topic],
        "group_id": f"g-{name}",
        "hbase": {"table": name, "column_family": "d"},
        "bad_records": "dead_letter",
        "mapping": {"max_record_bytes": max_record_bytes},
        "spark": {"mode": "session"},
        **extra,
    }


def write_operator(name: str, summary: dict[str, Any], file: Path) -> SessionWriteEpochOperator:
    """The write task of the epoch ``summary`` (the reserve task's XCom) of pipeline ``name``."""
    return SessionWriteEpochOperator(
        task_id="write",
        pipeline=name,
        epoch_id=summary["epoch_id"],
        fencing_token=summary["fencing_token"],
        spec=load_pipeline(name, file),
        pipelines_file=str(file),
    )


def versioned(stack: StackInfo, table: str) -> VersionedRows:
    """Every row's cells with all their versions (newest first)."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        hbase_table = connection.table(table)
        return {
            row: {
                column: hbase_table.cells(row, column, versions=5, include_timestamp=True)
                for column in sorted(cells)
            }
            for row, cells in hbase_table.scan()
        }
    finally:
        connection.close()


def epochs(dsn: str, name: str) -> list[Epoch]:
    with Ledger(dsn) as ledger:
        return list(ledger.epochs(EpochFilter(pipeline=name)))


@pytest.fixture(scope="module")
def connect_server(stack: StackInfo) -> Iterator[str]:
    """The stack's Spark Connect server's ``sc://`` URL; started here (and stopped after the
    module) when the stack runs none."""
    local = LocalStack(stack.state_dir)
    ours = local.spark_connect_port is None
    port = local.spark_connect_up()
    try:
        yield connect_url(port)
    finally:
        if ours:
            local.spark_connect_down()


@pytest.fixture(scope="module")
def world(stack: StackInfo, connect_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The topic, the table (3 versions kept) and the stream epoch written in session mode
    through the three operators (as one DAG run would run them)."""
    name = f"sm_{uuid.uuid4().hex[:8]}"
    folder = tmp_path_factory.mktemp("session")
    log_start = (stack.state_dir / "logs" / "spark-connect.log").stat().st_size
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(name, {"d": {"max_versions": 3}})
    hbase.close()
    port = int(connect_server.rsplit(":", 1)[1])
    with (
        created_topic(stack.kafka_bootstrap, partitions=2, prefix="sm") as topic,
        fresh_database(stack.ledger_dsn) as dsn,
        pytest.MonkeyPatch.context() as patch,
    ):
        produce(stack.kafka_bootstrap, topic, P0, partition=0)
        produce(stack.kafka_bootstrap, topic, P1, partition=1)
        env = {
            **stack.conn_env,
            "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn),
            "AIRFLOW_CONN_SPARK_CONNECT": spark_connect_connection(port),
        }
        for key, value in env.items():
            patch.setenv(key, value)
        file = folder / "broken.yaml"
        file.write_text(yaml.safe_dump({"pipelines": [declaration(name, topic, 64)]}))
        summary = ReserveEpochOperator(task_id="reserve", pipeline=name, pipelines_file=str(file)).execute(
            task_context()  # type: ignore[arg-type]
        )
        write = write_operator(name, summary, file)
        write.execute(task_context())
        CommitEpochOperator(
            task_id="commit", pipeline=name, epoch_id=summary["epoch_id"], pipelines_file=str(file)
        ).execute(task_context())  # type: ignore[arg-type]
        assert write.session_write is not None
        session_id = write.session_write.session.session_id
        yield World(
            stack, connect_server, dsn, env, topic, name, name, folder, summary, log_start, session_id
        )


def session_trip(world: World, file_name: str, max_record_bytes: int) -> tuple[EpochRoundTrip, Any]:
    """An :class:`EpochRoundTrip` of the pipeline under ``max_record_bytes`` and a new session
    (with the provider's zip) whose runner it writes with."""
    file = world.folder / file_name
    file.write_text(yaml.safe_dump({"pipelines": [declaration(world.name, world.topic, max_record_bytes)]}))
    trip = EpochRoundTrip(load_pipeline(world.name, file), world.dsn, world.env)
    return trip, open_session(world.url)


STREAM_CELLS = {  # versions are offsets; k2's two records share one HBase write (its newest)
    b"k0": {b"d:i": [(b"2", 2), (b"0", 0)]},
    b"k2": {b"d:i": [(b"11", 1)]},
}


def test_a_stream_epoch_in_session_mode_writes_votes_and_commits_exactly(world: World) -> None:
    assert versioned(world.stack, world.table) == STREAM_CELLS
    [epoch] = epochs(world.dsn, world.name)
    assert epoch_row(epoch) == EpochRow("stream", "COMMITTED", ((0, 0, 3), (1, 0, 2)), ((0, 3, 0), (1, 2, 0)))
    assert (epoch.metrics or {})["bad_records"] == 1
    assert (epoch.metrics or {})["tasks"] == 2
    assert dead_letter_rows(world.dsn, world.name) == [
        (1, epoch.epoch_id, None, False, "record is 101 bytes, larger th")
    ]
    trip = EpochRoundTrip(load_pipeline(world.name, world.folder / "broken.yaml"), world.dsn, world.env)
    assert trip.group_offsets((0, 1)) == {0: 3, 1: 2}


REPLAYED_CELLS = {b"k1": {b"d:i": [(b"1", 1)], b"d:pad": [(b"x" * 80, 1)]}}


def test_a_replay_in_session_mode_writes_exactly_the_dead_letter(world: World) -> None:
    trip, session = session_trip(world, "fixed.yaml", 4096)
    stream_id = world.stream["epoch_id"]
    run = RunIdentity(dag_id=f"eo_backfill__{world.name}", run_id=f"manual-{uuid.uuid4().hex[:6]}")
    try:
        with Ledger(world.dsn) as ledger:
            protocol = EpochProtocol(ledger, kafka=lambda: trip.kafka)
            params = {"topics": [], "start_offset": None, "replay_dead_letters": {"epoch": stream_id}}
            [chunk] = protocol.plan_backfill(trip.spec, request_of(params=params))
            xcom = json.loads(json.dumps([r.to_summary() for r in chunk]))
            reserved = protocol.reserve_backfill(trip.spec, request_of(xcom), run)
        assert isinstance(reserved, Reserved)
        runner = SessionTasks(session, f"eo-test-replay-{reserved.epoch.epoch_id}", client_identity())
        assert trip.write(reserved.epoch.epoch_id, runner) == 0
        replay = trip.commit(reserved.epoch.epoch_id)
    finally:
        session.stop()
    assert epoch_row(replay) == EpochRow("backfill", "COMMITTED", ((0, 1, 2),), ((0, 1, 0),))
    assert versioned(world.stack, world.table) == {**STREAM_CELLS, **REPLAYED_CELLS}
    assert dead_letter_rows(world.dsn, world.name) == [
        (1, stream_id, replay.epoch_id, True, "record is 101 bytes, larger th")
    ]


def test_a_backfill_chunk_in_session_mode_writes_submit_modes_versions(world: World) -> None:
    file = world.folder / "fixed.yaml"  # written by the replay's test
    chunk = WriteBackfillChunkOperator(
        task_id="chunk.write",
        pipeline=world.name,
        spec=load_pipeline(world.name, file),
        pipelines_file=str(file),
        ranges=[{"topic": world.topic, "partition": 0, "start": 0, "end": 3}],
    )
    context = task_context("backfill-1", dag_id=f"eo_backfill__{world.name}")
    summary = chunk.execute(context)
    assert summary["state"] == "WRITTEN"
    assert chunk.session_write is not None  # the pipeline's session, warm from the stream epoch
    assert chunk.session_write.session.session_id == world.session_id
    trip = EpochRoundTrip(load_pipeline(world.name, file), world.dsn, world.env)
    committed = trip.commit(summary["epoch_id"])
    assert epoch_row(committed) == EpochRow("backfill", "COMMITTED", ((0, 0, 3),), ((0, 3, 0),))
    # one segment: every row at the version of its last record (offset 2), as in submit mode;
    # k0's cell at version 2 is rewritten as it was, k1 gains version 2 beside the replay's 1
    k1 = {b"d:i": [(b"1", 2), (b"1", 1)], b"d:pad": [(b"x" * 80, 2), (b"x" * 80, 1)]}
    assert versioned(world.stack, world.table) == {**STREAM_CELLS, b"k1": k1}
    assert trip.group_offsets((0, 1)) == {0: 3, 1: 2}  # a backfill never moves the group


def test_another_pipelines_job_on_the_server_cannot_read_this_pipelines_credentials(world: World) -> None:
    password = parse_dsn(world.dsn)["password"]
    assert password and len(password) >= 8
    other = open_session(world.url)  # another pipeline's session on the same server
    try:
        assert other.session_id != world.session_id
        conf = other.conf.getAll
        assert not [key for key, value in conf.items() if password in str(value)]

        def environment_with(batches: Iterator[Any]) -> Iterator[Any]:
            import os

            import pyarrow as pa

            for _ in batches:
                found = [name for name, value in os.environ.items() if password in value]
                yield pa.RecordBatch.from_pydict({"found": [",".join(found)]})

        rows = other.range(0, 2, 1, 2).mapInArrow(environment_with, "found string").collect()
        assert [row.found for row in rows] == ["", ""]
    finally:
        other.stop()
    with (world.stack.state_dir / "logs" / "spark-connect.log").open("rb") as log:
        log.seek(world.log_start)  # what the server logged while this module ran
        assert password.encode() not in log.read()


def test_clients_opening_one_session_at_once_all_add_the_package(world: World) -> None:
    """Eight clients open one new server-side session at once (as a fleet's writes sharing
    credentials do): each adds the provider's zip; none fails on the server's race of two
    copies of the same file, and the session's job imports the provider from it."""
    session_id = str(uuid.uuid4())
    opened: list[Any] = []
    failures: list[BaseException] = []
    start = threading.Barrier(8)

    def open_one() -> None:
        try:
            start.wait()
            opened.append(open_session(world.url, session_id))
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert failures == []
        assert {session.session_id for session in opened} == {session_id}

        def provider_version(batches: Iterator[Any]) -> Iterator[Any]:
            import pyarrow as pa

            import airflow_provider_eo

            for _ in batches:
                yield pa.RecordBatch.from_pydict({"version": [airflow_provider_eo.__version__]})

        rows = opened[0].range(0, 1, 1, 1).mapInArrow(provider_version, "version string").collect()
        assert [row.version for row in rows] == [client_identity().version]
    finally:
        for session in opened[1:]:
            session.release_session_on_close = False
            session.stop()
        if opened:
            opened[0].stop()


def silent_kafka() -> socket.socket:
    """A listening socket that never answers: a Kafka client's reads wait on it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    return server


def test_on_kill_interrupts_the_tagged_job_and_recovery_settles_the_epoch(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"sk_{uuid.uuid4().hex[:8]}"
    hbase = happybase.Connection(world.stack.hbase_host, world.stack.hbase_port)
    hbase.create_table(name, {"d": {"max_versions": 3}})
    hbase.close()
    with created_topic(world.stack.kafka_bootstrap, partitions=1, prefix="sk") as topic:
        produce(world.stack.kafka_bootstrap, topic, [(b"a", b'{"i": 0}'), (b"a", b'{"i": 1}')], partition=0)
        file = world.folder / "kill.yaml"
        file.write_text(yaml.safe_dump({"pipelines": [declaration(name, topic, 4096)]}))
        for key, value in world.env.items():
            monkeypatch.setenv(key, value)
        summary = ReserveEpochOperator(task_id="reserve", pipeline=name, pipelines_file=str(file)).execute(
            task_context()  # type: ignore[arg-type]
        )
        silent = silent_kafka()
        extra = {"eo.timeout.ms": 600_000, "socket.timeout.ms": 600_000}
        bootstrap = f"127.0.0.1:{silent.getsockname()[1]}"
        monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", kafka_connection(bootstrap, extra))
        write = write_operator(name, summary, file)
        outcome: list[BaseException | None] = []

        def run() -> None:
            try:
                write.execute(task_context())
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        interrupted: list[str] = []
        while thread.is_alive() and not interrupted:  # until the job is there to interrupt
            session_write = write.session_write
            if session_write is not None and session_write.runner is not None:
                interrupted = session_write.runner.interrupt()
            thread.join(0.2)
        write.on_kill()  # what Airflow calls: the same interrupt by tag
        thread.join(120)
        silent.close()
        assert not thread.is_alive()
        assert interrupted and isinstance(outcome[0], SessionWriteFailed)
        assert outcome[0].exit_code == 4  # TASK_FAILED: not voted

        monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", world.env["AIRFLOW_CONN_EO_KAFKA"])
        [epoch] = epochs(world.dsn, name)
        assert (epoch.state.value, epoch.metrics) == ("RESERVED", None)
        assert versioned(world.stack, name) == {}

        trip = EpochRoundTrip(load_pipeline(name, file), world.dsn, world.env)
        trip.recover()
        session = open_session(world.url)
        try:
            again = trip.reserve()
            assert again is not None
            assert (
                trip.write(again.epoch_id, SessionTasks(session, "eo-test-after-kill", client_identity()))
                == 0
            )
            trip.commit(again.epoch_id)
        finally:
            session.stop()
        assert [epoch_row(e) for e in epochs(world.dsn, name)] == [
            EpochRow("stream", "ABORTED", ((0, 0, 2),), ()),
            EpochRow("stream", "COMMITTED", ((0, 0, 2),), ((0, 2, 0),)),
        ]
        assert versioned(world.stack, name) == {b"a": {b"d:i": [(b"1", 1)]}}  # one segment, its last offset
        assert trip.group_offsets() == {0: 2}


def test_a_task_refuses_an_executor_copy_of_another_version(world: World) -> None:
    trip, session = session_trip(world, "fixed.yaml", 4096)
    ours = client_identity()
    sent = PackageIdentity("0.0.0-other", ours.digest)  # what a task of another release would send
    before = versioned(world.stack, world.table)
    try:
        with trip.connections():
            settings = task_settings(trip.spec, 99)
        with pytest.raises(TaskFailed) as failed:
            SessionTasks(session, "eo-test-version", sent)(settings, [TaskRange(world.topic, 1, 0, 2)])
    finally:
        session.stop()
    error = failed.value.error
    assert error is not None and error.type == "ExecutorPackageMismatch"
    assert f"the executor runs airflow-provider-eo {ours.describe()}" in str(error)
    assert f"the Airflow task sent {sent.describe()}" in str(error)
    assert versioned(world.stack, world.table) == before  # refused before anything was read or written
