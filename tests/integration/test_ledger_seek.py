"""``eo-ledger seek`` and ``eo-ledger reset --to-group`` on the real ledger and broker:
cursors, gaps, ``eo.cursor_moves`` rows and the consumer group's offsets, exactly; every
refusal exits 2 and changes nothing (cursors, gaps, moves and group offsets compared).

The stream DAG's pause is stated with ``--stream-dag-paused`` here (the shared stack runs
no Airflow); tests/airflow/test_seek_asks_airflow.py asks a real Airflow.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import happybase
import psycopg2
import pytest
from confluent_kafka import Consumer

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.refusals import SeekRefused
from airflow_provider_eo.ledger.planning.seek_plan import plan_moves
from airflow_provider_eo.ledger.protocol.cursor_seek import _apply
from eo_devtools.ledger_direct import reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import EpochRoundTrip, ledger_connection, pipeline_spec
from tests.integration.ledger_support import fresh_database, make_spec, run_epoch
from tests.kafka_helpers import delete_records_before, produce

pytestmark = pytest.mark.integration

# record i of each partition has timestamp BASE_MS + i * 1000 (an hour ago: within retention)
BASE_MS = (int(time.time()) - 3600) * 1000
RECORDS = 10
CLI = Actor.cli()


@pytest.fixture(scope="module")
def db(stack: StackInfo) -> Iterator[str]:
    with fresh_database(stack.ledger_dsn) as dsn:
        yield dsn


@pytest.fixture
def env(stack: StackInfo, db: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("EO_LEDGER_DSN", db)
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AIRFLOW_CONN_AIRFLOW_API", raising=False)
    return db


@dataclass
class Seeded:
    """A pipeline over a 2-partition topic, 10 records each, one epoch committed up to 4."""

    spec: PipelineSpec
    topic: str
    dsn: str
    hook: EoKafkaHook
    pipelines_file: Path

    @property
    def name(self) -> str:
        return self.spec.name

    def tp(self, partition: int) -> tuple[str, int]:
        return (self.topic, partition)

    def state(self) -> dict[str, Any]:
        """Cursors (with initial offsets), gaps, cursor moves and group offsets."""
        with psycopg2.connect(self.dsn) as conn, conn.cursor() as cur:
            cur.execute(
                'SELECT "partition", initial_offset, cursor_offset FROM eo.partitions'
                " WHERE pipeline = %s ORDER BY 1",
                (self.name,),
            )
            partitions = cur.fetchall()
            cur.execute(
                'SELECT "partition", start_offset, end_offset, epoch_id, reason FROM eo.gaps'
                " WHERE pipeline = %s ORDER BY 1, 2",
                (self.name,),
            )
            gaps = cur.fetchall()
            cur.execute(
                'SELECT topic, "partition", from_offset, to_offset, kind, actor_kind, actor, reason'
                " FROM eo.cursor_moves WHERE pipeline = %s ORDER BY move_id",
                (self.name,),
            )
            moves = cur.fetchall()
        conn.close()
        group = self.hook.committed_offsets(self.spec.group_id, [self.tp(0), self.tp(1)])
        return {
            "partitions": partitions,
            "gaps": gaps,
            "moves": moves,
            "group": {p: group[self.tp(p)] for p in (0, 1)},
        }


@pytest.fixture
def seeded(
    stack: StackInfo, env: str, kafka_topic_factory: Callable[..., str], tmp_path: Path
) -> Iterator[Seeded]:
    topic = kafka_topic_factory(partitions=2, prefix="seek")
    for partition in (0, 1):
        records = [(f"k{i}", json.dumps({"v": i})) for i in range(RECORDS)]
        stamps = [BASE_MS + i * 1000 for i in range(RECORDS)]
        produce(stack.kafka_bootstrap, topic, records, partition=partition, timestamps=stamps)
    spec = make_spec(topics=[topic], per_partition=4)
    pipelines = tmp_path / "pipelines.yaml"
    entry = {"name": spec.name, "topics": [topic], "group_id": spec.group_id, "hbase": {"table": "tbl"}}
    pipelines.write_text(json.dumps({"pipelines": [entry]}))
    hook = EoKafkaHook()
    with Ledger(env) as ledger:
        assert run_epoch(ledger, spec, hook, "r1") is not None
    yield Seeded(spec, topic, env, hook, pipelines)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    """Run ``eo-ledger argv``; (exit code, parsed JSON of stdout or stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


def seek(capsys: pytest.CaptureFixture[str], s: Seeded, to: str, *extra: str) -> tuple[int, Any]:
    return cli(
        capsys, "seek", "--pipeline", s.name, "--to", to, "--reason", "ops ticket 7", "--yes",
        "--stream-dag-paused", "--pipelines-file", str(s.pipelines_file), *extra,
    )  # fmt: skip


def move(
    s: Seeded, partition: int, start: int, end: int, kind: str = "seek", reason: str = "ops ticket 7"
) -> tuple[Any, ...]:
    return (s.topic, partition, start, end, kind, CLI.kind, CLI.name, reason)


def answer(
    s: Seeded, to: str, moves: list[tuple[int, int, int]], gaps: list[tuple[int, int, int]]
) -> dict[str, Any]:
    """The exact JSON answer of a seek moving ``(partition, from, to)`` and publishing every ``to``."""

    def direction(a: int, b: int) -> str:
        return "none" if a == b else "forward" if b > a else "backward"

    return {
        "pipeline": s.name,
        "kind": "seek",
        "to": to,
        "reason": "ops ticket 7",
        "partitions": [
            {"topic": s.topic, "partition": p, "from": a, "to": b, "direction": direction(a, b)}
            for p, a, b in moves
        ],
        "gaps_recorded": [{"topic": s.topic, "partition": p, "start": a, "end": b} for p, a, b in gaps],
        "left_alone": [],
        "group_id": s.spec.group_id,
        "group_offsets_published": [{"topic": s.topic, "partition": p, "offset": b} for p, _, b in moves],
    }


def test_seek_forward_records_a_gap_moves_the_group_and_names_the_actor(
    seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    s = seeded
    assert s.state() == {"partitions": [(0, 0, 4), (1, 0, 4)], "gaps": [], "moves": [], "group": {0: 4, 1: 4}}
    assert seek(capsys, s, "offset:7", "--partition", f"{s.topic}:0") == (
        0,
        answer(s, "offset:7", [(0, 4, 7)], [(0, 4, 7)]),
    )
    assert s.state() == {
        "partitions": [(0, 0, 7), (1, 0, 4)],
        "gaps": [(0, 4, 7, None, "seek")],
        "moves": [move(s, 0, 4, 7)],
        "group": {0: 7, 1: 4},
    }
    # latest: both partitions forward to the high watermark, one gap each
    assert seek(capsys, s, "latest") == (
        0,
        answer(s, "latest", [(0, 7, 10), (1, 4, 10)], [(0, 7, 10), (1, 4, 10)]),
    )
    assert s.state() == {
        "partitions": [(0, 0, 10), (1, 0, 10)],
        "gaps": [(0, 4, 7, None, "seek"), (0, 7, 10, None, "seek"), (1, 4, 10, None, "seek")],
        "moves": [move(s, 0, 4, 7), move(s, 0, 7, 10), move(s, 1, 4, 10)],
        "group": {0: 10, 1: 10},
    }


def test_backward_then_forward_from_the_same_start_extends_the_gap(
    seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    s = seeded
    one = ("--partition", f"{s.topic}:0")
    assert seek(capsys, s, "offset:7", *one)[0] == 0
    assert seek(capsys, s, "offset:4", *one) == (0, answer(s, "offset:4", [(0, 7, 4)], []))
    assert seek(capsys, s, "offset:9", *one) == (0, answer(s, "offset:9", [(0, 4, 9)], [(0, 4, 9)]))
    # the same offset again moves nothing, records nothing, and publishes the cursor again
    assert seek(capsys, s, "offset:9", *one) == (0, answer(s, "offset:9", [(0, 9, 9)], []))
    assert s.state() == {
        "partitions": [(0, 0, 9), (1, 0, 4)],
        "gaps": [(0, 4, 9, None, "seek")],  # one gap: [4, 7) extended to [4, 9)
        "moves": [move(s, 0, 4, 7), move(s, 0, 7, 4), move(s, 0, 4, 9)],
        "group": {0: 9, 1: 4},
    }


def test_seek_earliest_below_the_initial_offset_lowers_it(
    stack: StackInfo, seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    s = seeded
    with psycopg2.connect(s.dsn) as conn, conn.cursor() as cur:  # as if pinned at 2 ("latest" then)
        cur.execute("UPDATE eo.partitions SET initial_offset = 2 WHERE pipeline = %s", (s.name,))
    conn.close()
    assert delete_records_before(stack.kafka_bootstrap, s.topic, 1, 1) == 1
    assert seek(capsys, s, "earliest") == (0, answer(s, "earliest", [(0, 4, 0), (1, 4, 1)], []))
    assert s.state() == {
        "partitions": [(0, 0, 0), (1, 1, 1)],
        "gaps": [],
        "moves": [move(s, 0, 4, 0), move(s, 1, 4, 1)],
        "group": {0: 0, 1: 1},
    }


def test_seek_to_a_timestamp_takes_the_first_record_at_or_after_it(
    seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    s = seeded
    to = f"timestamp:{BASE_MS + 5500}"  # records 6.. are at or after it
    assert seek(capsys, s, to) == (0, answer(s, to, [(0, 4, 6), (1, 4, 6)], [(0, 4, 6), (1, 4, 6)]))
    iso = datetime.fromtimestamp((BASE_MS + 2000) / 1000, UTC).isoformat()  # e.g. 2026-11-25T10:13:22+00:00
    assert seek(capsys, s, f"timestamp:{iso}") == (
        0,
        answer(s, f"timestamp:{BASE_MS + 2000}", [(0, 6, 2), (1, 6, 2)], []),
    )
    assert s.state()["partitions"] == [(0, 0, 2), (1, 0, 2)]
    assert s.state()["group"] == {0: 2, 1: 2}


def test_reset_to_group_takes_the_groups_offsets_and_leaves_partitions_without_one(
    seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    s = seeded
    other = f"other-{uuid.uuid4().hex[:8]}"
    s.hook.commit_offsets(other, {s.tp(0): 2})
    argv = ("reset", "--pipeline", s.name, "--to-group", "--reason", "align", "--yes", "--stream-dag-paused")
    code, first = cli(capsys, *argv, "--group-id", other)
    assert (code, first) == (
        0,
        {
            "pipeline": s.name,
            "kind": "reset",
            "to": f"group:{other}",
            "reason": "align",
            "partitions": [{"topic": s.topic, "partition": 0, "from": 4, "to": 2, "direction": "backward"}],
            "gaps_recorded": [],
            "left_alone": [{"topic": s.topic, "partition": 1}],
            "group_id": other,
            "group_offsets_published": [],
        },
    )
    s.hook.commit_offsets(other, {s.tp(1): 6})
    code, second = cli(capsys, *argv, "--group-id", other)
    assert code == 0
    assert (second["partitions"], second["gaps_recorded"], second["left_alone"]) == (
        [
            {"topic": s.topic, "partition": 0, "from": 2, "to": 2, "direction": "none"},
            {"topic": s.topic, "partition": 1, "from": 4, "to": 6, "direction": "forward"},
        ],
        [{"topic": s.topic, "partition": 1, "start": 4, "end": 6}],
        [],
    )
    assert s.state() == {
        "partitions": [(0, 0, 2), (1, 0, 6)],
        "gaps": [(1, 4, 6, None, "reset")],
        "moves": [move(s, 0, 4, 2, "reset", "align"), move(s, 1, 4, 6, "reset", "align")],
        "group": {0: 4, 1: 4},  # the pipeline's own group is not touched by a reset from another
    }


def test_every_refusal_exits_2_and_changes_nothing(
    stack: StackInfo, seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    s = seeded
    assert delete_records_before(stack.kafka_bootstrap, s.topic, 1, 2) == 2
    before = s.state()
    file = ("--pipelines-file", str(s.pipelines_file))
    base = ("--pipeline", s.name, "--reason", "r", *file)
    paused = ("--yes", "--stream-dag-paused")
    refusals = {
        "no --yes": (("seek", *base, "--to", "latest", "--stream-dag-paused"),
                     f"refusing to seek pipeline {s.name!r} without --yes"),
        "reset without --yes": (("reset", *base, "--to-group", "--stream-dag-paused"),
                                f"refusing to reset pipeline {s.name!r} without --yes"),
        "bad --to": (("seek", *base, "--to", "offset:-1", *paused),
                     "bad target 'offset:-1': --to takes earliest, latest, offset:N (N >= 0) or "
                     "timestamp:T (ISO-8601 or epoch ms)"),
        "bad timestamp": (("seek", *base, "--to", "timestamp:yesterday", *paused),
                          "bad timestamp 'yesterday': --to takes earliest, latest, offset:N (N >= 0) or "
                          "timestamp:T (ISO-8601 or epoch ms)"),
        "below low": (("seek", *base, "--to", "offset:1", *paused),
                      f"offset 1 is below the low watermark of {s.topic}[1]: "
                      "low watermark 2, high watermark 10"),
        "above high": (("seek", *base, "--to", "offset:11", *paused),
                       f"offset 11 is above the high watermark of {s.topic}[0]: "
                       "low watermark 0, high watermark 10"),
        "timestamp after every record": (
            ("seek", *base, "--to", f"timestamp:{BASE_MS + 10_000}", "--partition", f"{s.topic}:1", *paused),
            f"timestamp {BASE_MS + 10_000} is after every record of {s.topic}[1] (offsets 2..9): nothing to "
            "seek to; use --to latest to skip them all",
        ),
        "not pinned": (("seek", *base, "--to", "latest", "--partition", f"{s.topic}:5", *paused),
                       f"pipeline {s.name!r} has no pinned partition {s.topic}:5 "
                       f"(pinned: {s.topic}:0, {s.topic}:1)"),
        "unknown to the ledger": (("seek", "--pipeline", "nope", "--reason", "r", "--to", "latest",
                                   "--group-id", "g", *paused),
                                  "pipeline 'nope' is unknown to the ledger "
                                  "(eo-ledger pipelines lists them)"),
        "no API connection": (("seek", *base, "--to", "latest", "--yes"),
                              f"cannot ask Airflow whether eo_stream__{s.name} is paused "
                              "(connection 'airflow_api' not found: AIRFLOW_CONN_AIRFLOW_API is not set): "
                              "pause the DAG, then run again with --stream-dag-paused"),
    }  # fmt: skip
    for case, (argv, message) in refusals.items():
        assert cli(capsys, *argv) == (2, {"error": message, "type": "Refused"}), case
    code, error = cli(capsys, "seek", "--pipeline", "nope", "--reason", "r", "--to", "latest", *file, *paused)
    assert (code, error["type"]) == (2, "Refused")
    assert error["error"].startswith("unknown pipeline 'nope': ")
    assert error["error"].endswith("(or pass --group-id)")

    with Ledger(s.dsn) as ledger:  # an open epoch of the pipeline
        epoch = reserve_stream_epoch(ledger, s.spec, s.hook, dag_id="d", run_id="r2")
        assert epoch is not None
        before = s.state()
        for argv in (("seek", *base, "--to", "earliest", *paused), ("reset", *base, "--to-group", *paused)):
            assert cli(capsys, *argv) == (
                2,
                {
                    "error": f"pipeline {s.name!r} has open epochs {epoch.epoch_id} (stream, RESERVED): "
                    "let them finish, or settle them with `eo-ledger commit ID --yes` / "
                    "`eo-ledger abort ID --yes`, then run this again",
                    "type": "Refused",
                },
            )
        assert s.state() == before
        ledger.abort(epoch.epoch_id, "test")
    assert s.state() == before


def test_the_transaction_checks_open_epochs_and_cursors_again_under_the_lock(seeded: Seeded) -> None:
    """A plan made before an epoch opened (or a cursor moved) is refused by its transaction."""
    s = seeded
    before = s.state()
    plan = plan_moves(s.name, "seek", {s.tp(0): 4, s.tp(1): 4}, {s.tp(0): 8, s.tp(1): 1})
    stale = plan_moves(s.name, "seek", {s.tp(0): 3, s.tp(1): 4}, {s.tp(0): 8, s.tp(1): 4})
    with Ledger(s.dsn, actor=CLI) as ledger:
        with pytest.raises(SeekRefused, match=rf"cursors moved while planning \({s.topic}\[0\] 3 -> 4\)"):
            _apply(ledger, stale, "r")
        epoch = reserve_stream_epoch(ledger, s.spec, s.hook, dag_id="d", run_id="r2")
        assert epoch is not None
        with pytest.raises(SeekRefused, match=f"has open epochs {epoch.epoch_id} "):
            _apply(ledger, plan, "r")
        assert s.state() == before
        ledger.abort(epoch.epoch_id, "test")
        _apply(ledger, plan, "r")
    assert s.state()["moves"] == [move(s, 0, 4, 8, reason="r"), move(s, 1, 4, 1, reason="r")]


def cells(stack: StackInfo, table: str) -> dict[bytes, dict[bytes, list[tuple[bytes, int]]]]:
    """Every version of every cell of ``table``: row -> column -> [(value, timestamp)], newest first."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        hbase_table = connection.table(table)
        return {
            row: {
                column: hbase_table.cells(row, column, versions=10, include_timestamp=True)
                for column in sorted(columns)
            }
            for row, columns in hbase_table.scan()
        }
    finally:
        connection.close()


def test_a_backward_seek_is_re_read_by_the_next_epoch_and_leaves_hbase_exactly_as_it_was(
    stack: StackInfo, env: str, kafka_topic_factory: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="seek-reread")
    values = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5)]  # a and b written twice
    produce(stack.kafka_bootstrap, topic, [(k, json.dumps({"v": v})) for k, v in values], partition=0)
    table = f"seek_{uuid.uuid4().hex[:8]}"
    admin = happybase.Connection(stack.hbase_host, stack.hbase_port)
    admin.create_table(table, {"d": {"max_versions": 5}})
    admin.close()
    try:
        spec = pipeline_spec(table, topic, table, caps={"max_records_per_partition": 3})
        trip = EpochRoundTrip(spec, env, {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(env)})
        assert trip.run_stream_epoch() is not None  # [0, 3)
        assert trip.run_stream_epoch() is not None  # [3, 5)
        written = cells(stack, table)
        assert {
            row: {c: [v for v, _ in versions] for c, versions in cols.items()}
            for row, cols in written.items()
        } == {
            b"a": {b"d:v": [b"3"]},  # an epoch writes a key's last record only
            b"b": {b"d:v": [b"5", b"2"]},
            b"c": {b"d:v": [b"4"]},
        }
        code, moved = cli(
            capsys, "seek", "--pipeline", spec.name, "--to", "earliest", "--reason", "re-read after a fix",
            "--yes", "--stream-dag-paused", "--group-id", spec.group_id,
        )  # fmt: skip
        assert (code, moved["partitions"], moved["gaps_recorded"], moved["group_offsets_published"]) == (
            0,
            [{"topic": topic, "partition": 0, "from": 5, "to": 0, "direction": "backward"}],
            [],
            [{"topic": topic, "partition": 0, "offset": 0}],
        )
        assert trip.group_offsets() == {0: 0}
        with Ledger(env) as ledger:
            assert ledger.cursors(spec.name) == {(topic, 0): 0}
        assert trip.run_stream_epoch() is not None  # [0, 3) again
        assert trip.run_stream_epoch() is not None  # [3, 5) again
        assert trip.run_stream_epoch() is None
        assert cells(stack, table) == written  # same values, same versions: nothing moved back or doubled
        assert [(e.state, e.ranges) for e in trip.epochs()] == [
            ("COMMITTED", ((0, 0, 3),)),
            ("COMMITTED", ((0, 3, 5),)),
        ] * 2
        assert trip.group_offsets() == {0: 5}
        with Ledger(env) as ledger:
            assert ledger.cursors(spec.name) == {(topic, 0): 5}
            assert ledger.gaps(spec.name) == []
        with psycopg2.connect(env) as conn, conn.cursor() as cur:
            cur.execute(
                'SELECT topic, "partition", from_offset, to_offset, kind, actor_kind, actor, reason'
                " FROM eo.cursor_moves WHERE pipeline = %s ORDER BY move_id",
                (spec.name,),
            )
            assert cur.fetchall() == [(topic, 0, 5, 0, "seek", CLI.kind, CLI.name, "re-read after a fix")]
        conn.close()
    finally:
        admin = happybase.Connection(stack.hbase_host, stack.hbase_port)
        admin.delete_table(table, disable=True)
        admin.close()


def test_a_group_that_cannot_take_the_offsets_leaves_it_behind_until_the_same_seek_runs_again(
    stack: StackInfo, seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ledger transaction commits first; a failed publish (here: the group has a live
    member) says so, and the same seek again moves nothing and publishes the cursors."""
    s = seeded
    member = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": s.spec.group_id,
                       "enable.auto.commit": False})  # fmt: skip
    member.subscribe([s.topic])
    try:
        while not member.assignment():
            member.poll(0.2)
        code, error = seek(capsys, s, "latest")
        assert (code, error["type"]) == (1, "EoKafkaError")
        assert error["error"].startswith(
            f"pipeline {s.name!r}: the cursors moved in the ledger, but publishing them to group "
            f"{s.spec.group_id!r} failed ("
        )
        assert error["error"].endswith("); run the same seek again to publish them")
    finally:
        member.close()
    assert s.state() == {
        "partitions": [(0, 0, 10), (1, 0, 10)],
        "gaps": [(0, 4, 10, None, "seek"), (1, 4, 10, None, "seek")],
        "moves": [move(s, 0, 4, 10), move(s, 1, 4, 10)],
        "group": {0: 4, 1: 4},
    }
    assert seek(capsys, s, "latest") == (0, answer(s, "latest", [(0, 10, 10), (1, 10, 10)], []))
    assert s.state()["group"] == {0: 10, 1: 10}
    assert len(s.state()["moves"]) == 2
