"""Replaying dead letters once their cause is fixed (real Kafka, HBase and PostgreSQL; the
driver and its tasks in-process, the backfill DAG's path through the protocol): exactly the
selected records are written, good records' cells keep their versions, the replayed dead
letters are resolved naming the replay epoch, a record that still fails stays one
unresolved dead letter; and ``eo-ledger dead-letters replay``: its exact dry run, its
refusals (nothing changed).

The pipeline dead-letters records larger than ``mapping.max_record_bytes`` (64); the fix
raises it. Partition 0 holds::

    0 k0 small   1 k1 big   2 k2 small   3 k3 "{broken" (bad JSON: still fails)
    4 k4 big     5 k5 small 6 k1 small (a newer value of k1's row)

``backfill.max_records_per_epoch`` is 2, so the three dead letters replay as two chunks.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import happybase
import pytest
import yaml

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.ledger import Epoch, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.planning.replay_plan import ReplayFilter
from airflow_provider_eo.ledger.protocol import EpochProtocol, Reserved
from airflow_provider_eo.ledger.protocol.operator_tools import OperatorTools
from airflow_provider_eo.operators.backfill_request_form import request_of
from tests.conftest import StackInfo
from tests.integration.dead_letter_support import dead_letter_rows, replay_selection_rows
from tests.integration.epoch_round_trip import EpochRoundTrip, ledger_connection
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import created_topic, produce

pytestmark = pytest.mark.integration

BIG = json.dumps({"i": 0, "pad": "x" * 80}).encode()
RECORDS = [
    (b"k0", b'{"i": 0}'),
    (b"k1", BIG),
    (b"k2", b'{"i": 2}'),
    (b"k3", b"{broken"),
    (b"k4", BIG),
    (b"k5", b'{"i": 5}'),
    (b"k1", b'{"i": 6}'),
]
TimedRows = dict[bytes, dict[bytes, tuple[bytes, int]]]


def declaration(name: str, topic: str, table: str, max_record_bytes: int) -> dict[str, Any]:
    return {
        "name": name,
        "topics": [topic],
        "group_id": f"g-{name}",
        "hbase": {"table": table, "column_family": "d"},
        "bad_records": "dead_letter",
        "mapping": {"max_record_bytes": max_record_bytes},
        "backfill": {"max_records_per_epoch": 2},
    }


def timed_scan(stack: StackInfo, table: str) -> TimedRows:
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        return {row: dict(cells) for row, cells in connection.table(table).scan(include_timestamp=True)}
    finally:
        connection.close()


def cli(dsn: str, *argv: str) -> tuple[int, Any]:
    """``eo-ledger argv`` over ``dsn``: (exit code, the JSON of stdout, or of stderr on failure)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--dsn", dsn, *argv])
    return code, json.loads(out.getvalue() if code == 0 else err.getvalue())


@dataclass
class World:
    stack: StackInfo
    dsn: str
    topic: str
    table: str
    name: str
    fixed_file: Path
    stream: Epoch
    before: TimedRows
    dry_run: tuple[int, Any]


@contextlib.contextmanager
def replay_world(stack: StackInfo, folder: Path, records: list[tuple[bytes, bytes]]) -> Iterator[World]:
    """``records`` on a new one-partition topic, written by one stream epoch under the broken
    spec (``max_record_bytes`` 64) into a new table; the fixed spec's file beside it."""
    name = f"rp_{uuid.uuid4().hex[:8]}"
    table = name
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(table, {"d": {}})
    hbase.close()
    with (
        created_topic(stack.kafka_bootstrap, partitions=1, prefix="rp") as topic,
        fresh_database(stack.ledger_dsn) as dsn,
    ):
        produce(stack.kafka_bootstrap, topic, records, partition=0)
        env = {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)}
        broken_file, fixed_file = folder / "broken.yaml", folder / "fixed.yaml"
        broken_file.write_text(yaml.safe_dump({"pipelines": [declaration(name, topic, table, 64)]}))
        fixed_file.write_text(yaml.safe_dump({"pipelines": [declaration(name, topic, table, 4096)]}))
        stream = EpochRoundTrip(load_pipeline(name, broken_file), dsn, env).run_stream_epoch()
        assert stream is not None
        before = timed_scan(stack, table)
        dry_run = cli(
            dsn, "dead-letters", "replay", "--pipeline", name, "--epoch", str(stream.epoch_id),
            "--pipelines-file", str(fixed_file), "--show", "2", "--dry-run",
        )  # fmt: skip
        yield World(stack, dsn, topic, table, name, fixed_file, stream, before, dry_run)


@pytest.fixture(scope="module")
def world(stack: StackInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with replay_world(stack, tmp_path_factory.mktemp("replay"), RECORDS) as built:
        yield built


def replay_in_process(world: World, params: dict[str, Any]) -> list[Epoch]:
    """What the backfill DAG's run does, in-process: plan, then per chunk reserve (from
    the chunk's XCom form), write (driver and tasks without Spark), commit."""
    spec = load_pipeline(world.name, world.fixed_file)
    env = {**world.stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(world.dsn)}
    trip = EpochRoundTrip(spec, world.dsn, env)
    run = RunIdentity(dag_id=f"eo_backfill__{world.name}", run_id=f"manual-{uuid.uuid4().hex[:6]}")
    epochs = []
    with Ledger(world.dsn) as ledger:
        protocol = EpochProtocol(ledger, kafka=lambda: trip.kafka)
        chunks = protocol.plan_backfill(spec, request_of(params=params))
        for chunk in chunks:
            xcom = json.loads(json.dumps([r.to_summary() for r in chunk]))
            reserved = protocol.reserve_backfill(spec, request_of(xcom), run)
            assert isinstance(reserved, Reserved)
            again = protocol.reserve_backfill(spec, request_of(xcom), run)
            assert again == reserved  # a retry of the chunk gets the same epoch
            epochs.append(trip.write_and_commit(reserved.epoch))
    return epochs


def test_the_stream_epoch_dead_letters_the_big_and_the_broken_records(world: World) -> None:
    assert (world.stream.metrics or {})["bad_records"] == 3
    epoch = world.stream.epoch_id
    assert dead_letter_rows(world.dsn, world.name) == [
        (1, epoch, None, False, "record is 101 bytes, larger th"),
        (3, epoch, None, False, "value is not valid JSON: Expec"),
        (4, epoch, None, False, "record is 101 bytes, larger th"),
    ]
    assert sorted(world.before) == [b"k0", b"k1", b"k2", b"k5"]


def test_dry_run_reports_exactly_what_would_be_replayed(world: World) -> None:
    assert world.dry_run == (
        0,
        {
            "pipeline": world.name,
            "filter": {"epoch": world.stream.epoch_id},
            "records": 3,
            "already_resolved": 0,
            "chunks": [
                [{"topic": world.topic, "partition": 0, "start": 1, "end": 4, "selected": 2}],
                [{"topic": world.topic, "partition": 0, "start": 4, "end": 5, "selected": 1}],
            ],
            "partitions": [{"topic": world.topic, "partition": 0, "count": 3, "offsets": [1, 3], "more": 1}],
            "dry_run": True,
            "dag_id": f"eo_backfill__{world.name}",
            "conf": {"replay_dead_letters": {"epoch": world.stream.epoch_id}},
            "dag_run_id": None,
        },
    )


def test_replay_writes_exactly_the_fixed_records_and_resolves_them(world: World) -> None:
    conf = {"replay_dead_letters": {"epoch": world.stream.epoch_id}}
    first, second = replay_in_process(world, {"topics": [], "start_offset": None, **conf})
    after = timed_scan(world.stack, world.table)

    # only k1 (offset 1) and k4 (offset 4) are new cells; every earlier cell is unchanged
    assert sorted(after) == [b"k0", b"k1", b"k2", b"k4", b"k5"]
    for row in (b"k0", b"k2", b"k5"):
        assert after[row] == world.before[row]
    assert after[b"k1"][b"d:i"] == world.before[b"k1"][b"d:i"] == (b"6", world.before[b"k1"][b"d:i"][1])
    assert after[b"k1"][b"d:pad"] == (b"x" * 80, 1)  # offset 1's version: below offset 6's
    assert {col: value for col, (value, _) in after[b"k4"].items()} == {b"d:i": b"0", b"d:pad": b"x" * 80}
    assert {ts for _, ts in after[b"k4"].values()} == {4}

    # the replay epochs: backfills over [min, max + 1) of their selections, in the ledger
    assert [(r.start, r.end) for e in (first, second) for r in e.ranges] == [(1, 4), (4, 5)]
    assert [replay_selection_rows(world.dsn, e.epoch_id) for e in (first, second)] == [
        [(world.topic, 0, 1), (world.topic, 0, 3)],
        [(world.topic, 0, 4)],
    ]
    metrics = [(e.metrics or {}) for e in (first, second)]
    assert [(m["records"], m["skipped_offsets"], m["bad_records"]) for m in metrics] == [(2, 1, 1), (1, 0, 0)]

    # resolved naming their epoch; the still-broken record: one row, unresolved, the replay's
    assert dead_letter_rows(world.dsn, world.name) == [
        (1, world.stream.epoch_id, first.epoch_id, True, "record is 101 bytes, larger th"),
        (3, first.epoch_id, None, False, "value is not valid JSON: Expec"),
        (4, world.stream.epoch_id, second.epoch_id, True, "record is 101 bytes, larger th"),
    ]


def test_refusals_change_nothing(world: World) -> None:
    with Ledger(world.dsn) as ledger:
        epochs_before = ledger.epochs(EpochFilter(pipeline=world.name))
    letters_before = dead_letter_rows(world.dsn, world.name)
    base = ["dead-letters", "replay", "--pipelines-file", str(world.fixed_file)]
    epoch = str(world.stream.epoch_id)

    code, answer = cli(world.dsn, *base, "--pipeline", world.name, "--epoch", epoch, "--yes")
    resolvers = sorted({row[2] for row in letters_before if row[2] is not None})
    assert (code, answer) == (
        2,
        {
            "error": f"pipeline {world.name!r}: the 2 dead letter(s) matching {{'epoch': {epoch}}} are "
            f"already resolved by epoch(s) {', '.join(map(str, resolvers))}, nothing to replay",
            "type": "Refused",
        },
    )
    code, answer = cli(world.dsn, *base, "--pipeline", "nope", "--epoch", epoch, "--dry-run")
    assert code == 2 and answer["type"] == "Refused"
    assert "pipeline 'nope': pipeline not declared" in answer["error"]
    code, answer = cli(world.dsn, *base, "--pipeline", world.name, "--reason", "no such error", "--dry-run")
    assert (code, answer) == (
        2,
        {
            "error": f"pipeline {world.name!r}: no dead letter of a committed epoch matches "
            "{'reason': 'no such error'}",
            "type": "Refused",
        },
    )
    code, answer = cli(world.dsn, *base, "--pipeline", world.name, "--reason", "JSON")
    assert (code, answer["error"]) == (
        2,
        "refusing to trigger a replay without --yes (or report it with --dry-run)",
    )
    code, answer = cli(world.dsn, *base, "--pipeline", world.name, "--partition", "0", "--dry-run")
    assert (code, answer["error"]) == (2, "replay: a partition or offset range needs its topic")
    with pytest.MonkeyPatch.context() as patch:  # no airflow_api connection: say how else to trigger
        patch.delenv("AIRFLOW_CONN_AIRFLOW_API", raising=False)
        code, answer = cli(world.dsn, *base, "--pipeline", world.name, "--reason", "JSON", "--yes")
    dag_id = f"eo_backfill__{world.name}"
    assert (code, answer["error"]) == (
        2,
        f"cannot trigger {dag_id} (connection 'airflow_api' not found: AIRFLOW_CONN_AIRFLOW_API is not "
        f"set): set the connection, or trigger {dag_id} from the Airflow UI with the run conf "
        '{"replay_dead_letters": {"reason": "JSON"}}',
    )

    # the broken record can still be selected by its reason and by its offset range
    code, answer = cli(world.dsn, *base, "--pipeline", world.name, "--reason", "json", "--dry-run")
    assert (code, answer["records"], answer["partitions"][0]["offsets"]) == (0, 1, [3])
    code, answer = cli(
        world.dsn, *base, "--pipeline", world.name, "--topic", world.topic, "--partition", "0",
        "--from-offset", "2", "--to-offset", "4", "--dry-run",
    )  # fmt: skip
    assert (code, answer["records"], answer["already_resolved"]) == (0, 1, 0)

    with Ledger(world.dsn) as ledger:
        assert ledger.epochs(EpochFilter(pipeline=world.name)) == epochs_before
    assert dead_letter_rows(world.dsn, world.name) == letters_before


def test_a_record_refailing_in_an_aborted_replay_stays_selectable(world: World) -> None:
    """The replay epoch re-records the still-broken record under its own id, then is aborted
    (an operator's abort of a WRITTEN epoch): the row stays selectable, a later replay
    selects it, and nothing is resolved by the aborted epoch."""
    spec = load_pipeline(world.name, world.fixed_file)
    env = {**world.stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(world.dsn)}
    trip = EpochRoundTrip(spec, world.dsn, env)
    run = RunIdentity(dag_id=f"eo_backfill__{world.name}", run_id="aborted-replay")
    params = {"replay_dead_letters": {"reason": "not valid json"}}
    with Ledger(world.dsn) as ledger:
        protocol = EpochProtocol(ledger, kafka=lambda: trip.kafka)
        (chunk,) = protocol.plan_backfill(spec, request_of(params=params))
        reserved = protocol.reserve_backfill(spec, request_of([r.to_summary() for r in chunk]), run)
        assert isinstance(reserved, Reserved)
        assert trip.write(reserved.epoch.epoch_id) == 0
        protocol.abort(reserved.epoch.epoch_id, "test: operator abort", allow_written=True)
        assert [row[:3] for row in dead_letter_rows(world.dsn, world.name)][1] == (
            3,
            reserved.epoch.epoch_id,
            None,
        )
        plan = OperatorTools(ledger).plan_replay(spec, ReplayFilter(reason="not valid json"))
    assert plan.selected == {(world.topic, 0): (3,)}


def test_a_replayed_record_outranks_the_older_value_written_beside_it(
    stack: StackInfo, tmp_path: Path
) -> None:
    """kA's older value (offset 0) and its dead-lettered newer one (offset 1) fall in one
    batch: the dead letter closes the segment, so offset 0 is versioned 0, not 2, and the
    replay of offset 1 (version 1) is what the row shows afterwards."""
    records = [(b"kA", b'{"i": 7}'), (b"kA", BIG), (b"kB", b'{"i": 2}')]
    with replay_world(stack, tmp_path, records) as built:
        assert built.before == {b"kA": {b"d:i": (b"7", 0)}, b"kB": {b"d:i": (b"2", 2)}}
        replay_in_process(
            built,
            {"topics": [], "start_offset": None, "replay_dead_letters": {"epoch": built.stream.epoch_id}},
        )
        assert timed_scan(stack, built.table) == {
            b"kA": {b"d:i": (b"0", 1), b"d:pad": (b"x" * 80, 1)},
            b"kB": {b"d:i": (b"2", 2)},
        }
