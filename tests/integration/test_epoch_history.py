"""Every epoch's history: each transition path leaves exactly one ``eo.epoch_transitions`` row
naming who (the task instance, ``eo-ledger`` user@host, recovery) and why; an idempotent
repeat leaves none; the database refuses a change without an actor. ``eo-ledger epoch ID``
and ``eo-ledger history`` print it exactly.

Real PostgreSQL and Kafka; the operators run through ``execute(context)`` with a stand-in
``ti`` (the Spark driver's vote: tests/integration/test_spark_app.py; the operators inside
Airflow: tests/integration/test_operators_dag.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import psycopg2
import pytest

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.history import CursorMove
from airflow_provider_eo.ledger.store.transaction_labels import label_actor
from airflow_provider_eo.operators.backfill import ReserveBackfillEpochOperator
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.recover import RecoverEpochsOperator
from airflow_provider_eo.operators.release import ReleaseEpochOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    conn_env_fixture,
    fill,
    ledger_fixture,
    pipeline_fixture,
)

pytestmark = pytest.mark.integration

Row = tuple[str | None, str, str, str, str]
REWIND = "rewind for the test"


def context(run_id: str, task_id: str, dag_id: str = "eo_stream", try_number: int = 1) -> Any:
    """The part of a task context the operators read: a ``ti`` (no live runs: no ``get_dr_count``)."""
    ti = SimpleNamespace(dag_id=dag_id, run_id=run_id, task_id=task_id, try_number=try_number)
    return {"ti": ti, "params": {}}


def history(dsn: str, epoch_id: int) -> list[Row]:
    """``(from, to, actor_kind, actor, reason)`` of every history row of the epoch, oldest first."""
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT from_state, to_state, actor_kind, actor, reason FROM eo.epoch_transitions"
            " WHERE epoch_id = %s ORDER BY transition_id",
            (epoch_id,),
        )
        rows = list(cur.fetchall())
    conn.close()
    return rows


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    """Run ``eo-ledger argv``; (exit code, parsed JSON of stdout, or of stderr on failure)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


def test_stream_reserve_commit_and_recovery_each_leave_one_row(
    stack, ledger: Ledger, pipeline, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="hist-stream")
    fill(stack, topic, [3])
    name, _, file = pipeline(topics=[topic])
    reserve = ReserveEpochOperator(task_id="reserve", pipeline=name, pipelines_file=file)
    commit = CommitEpochOperator(task_id="commit", pipeline=name, pipelines_file=file, epoch_id=0)
    recover = RecoverEpochsOperator(task_id="recover", pipeline=name, pipelines_file=file)

    # reserve (try 1), vote as the write task, commit (try 2); a second commit adds nothing
    summary = reserve.execute(context("run-1", "reserve"))
    epoch_id = summary["epoch_id"]
    with Ledger(stack.ledger_dsn, actor=Actor.task("eo_stream", "run-1", "write", 1)) as writer:
        writer.vote_written(epoch_id, summary["fencing_token"], {"records": 3})
        writer.vote_written(epoch_id, summary["fencing_token"], {"records": 3})  # a repeated vote: no-op
    commit.epoch_id = epoch_id
    assert commit.execute(context("run-1", "commit", try_number=2))["action"] == "committed"
    assert commit.execute(context("run-1", "commit", try_number=3))["action"] == "noop"
    assert history(stack.ledger_dsn, epoch_id) == [
        (None, "RESERVED", "task", "eo_stream/run-1/reserve try 1", "reserved"),
        ("RESERVED", "WRITTEN", "task", "eo_stream/run-1/write try 1", "voted WRITTEN by its writer"),
        ("WRITTEN", "COMMITTED", "task", "eo_stream/run-1/commit try 2", "committed"),
    ]

    # recovery re-commits a WRITTEN epoch of a crashed run, as the recovering task
    fill(stack, topic, [2])
    written = reserve.execute(context("crashed-1", "reserve"))
    ledger.vote_written(written["epoch_id"], written["fencing_token"], {"records": 2})
    recovered = recover.execute(context("run-2", "recover"))
    assert recovered["recommitted"] == [written["epoch_id"]]
    assert history(stack.ledger_dsn, written["epoch_id"])[2:] == [
        (
            "WRITTEN",
            "COMMITTED",
            "recovery",
            "eo_stream/run-2/recover try 1",
            "WRITTEN: its data is in HBase",
        ),
    ]
    # ... and aborts a RESERVED epoch of a run that is not live; recovering again adds nothing
    fill(stack, topic, [1])
    stale = reserve.execute(context("crashed-2", "reserve"))
    assert recover.execute(context("run-3", "recover"))["aborted"] == [stale["epoch_id"]]
    assert recover.execute(context("run-4", "recover")) == {
        "pipeline": name, "kind": "stream", "recommitted": [], "aborted": [], "kept": [],
    }  # fmt: skip
    reason = "recovery by eo_stream/run-3: owning run eo_stream/crashed-2 is not live"
    assert history(stack.ledger_dsn, stale["epoch_id"]) == [
        (None, "RESERVED", "task", "eo_stream/crashed-2/reserve try 1", "reserved"),
        ("RESERVED", "ABORTED", "recovery", "eo_stream/run-3/recover try 1", reason),
    ]
    assert history(stack.ledger_dsn, written["epoch_id"])[:2] == [
        (None, "RESERVED", "task", "eo_stream/crashed-1/reserve try 1", "reserved"),
        ("RESERVED", "WRITTEN", "process", ledger.actor.name, "voted WRITTEN by its writer"),
    ]


def test_backfill_reserve_and_release_each_leave_one_row(
    stack, ledger: Ledger, pipeline, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="hist-backfill")
    fill(stack, topic, [4])
    name, _, file = pipeline(topics=[topic])

    def reserve(start: int, end: int) -> dict[str, Any]:
        op = ReserveBackfillEpochOperator(
            task_id="reserve",
            pipeline=name,
            pipelines_file=file,
            ranges=[{"topic": topic, "partition": 0, "start": start, "end": end}],
        )
        return op.execute(context("b-1", "reserve", dag_id="eo_backfill"))

    written, unwritten = reserve(0, 2), reserve(2, 4)
    ledger.vote_written(written["epoch_id"], written["fencing_token"], {"records": 2})
    release = ReleaseEpochOperator(task_id="release", pipeline=name, pipelines_file=file)
    assert release.execute(context("b-1", "release", dag_id="eo_backfill")) == {
        "pipeline": name, "committed": [written["epoch_id"]], "aborted": [unwritten["epoch_id"]],
    }  # fmt: skip
    assert release.execute(context("b-1", "release", dag_id="eo_backfill", try_number=2))["committed"] == []
    releaser = "eo_backfill/b-1/release try 1"
    assert history(stack.ledger_dsn, written["epoch_id"]) == [
        (None, "RESERVED", "task", "eo_backfill/b-1/reserve try 1", "reserved"),
        ("RESERVED", "WRITTEN", "process", ledger.actor.name, "voted WRITTEN by its writer"),
        ("WRITTEN", "COMMITTED", "task", releaser, "WRITTEN by this run"),
    ]
    assert history(stack.ledger_dsn, unwritten["epoch_id"]) == [
        (None, "RESERVED", "task", "eo_backfill/b-1/reserve try 1", "reserved"),
        ("RESERVED", "ABORTED", "task", releaser, "backfill run b-1 ended before its commit"),
    ]


def test_manual_commit_and_abort_are_recorded_as_eo_ledger(
    stack,
    ledger: Ledger,
    pipeline,
    kafka_topic_factory: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EO_LEDGER_DSN", stack.ledger_dsn)
    topic = kafka_topic_factory(partitions=1, prefix="hist-cli")
    fill(stack, topic, [2])
    name, group, file = pipeline(topics=[topic])
    reserve = ReserveEpochOperator(task_id="reserve", pipeline=name, pipelines_file=file)
    me = Actor.cli().name

    summary = reserve.execute(context("run-1", "reserve"))
    epoch_id = summary["epoch_id"]
    ledger.vote_written(epoch_id, summary["fencing_token"], {"records": 2})
    code, answer = cli(
        capsys, "commit", str(epoch_id), "--yes", "--group-id", group, "--pipelines-file", file
    )
    assert (code, answer["already_committed"]) == (0, False)
    code, answer = cli(capsys, "commit", str(epoch_id), "--yes", "--pipelines-file", file)  # idempotent
    assert (code, answer["already_committed"]) == (0, True)
    assert history(stack.ledger_dsn, epoch_id)[2:] == [
        ("WRITTEN", "COMMITTED", "eo-ledger", me, "committed by operator (eo-ledger)")
    ]

    fill(stack, topic, [1])
    doomed = reserve.execute(context("run-2", "reserve"))["epoch_id"]
    assert cli(capsys, "abort", str(doomed))[0] == 2  # refused without --yes: no row either
    assert cli(capsys, "abort", str(doomed), "--yes", "--reason", "poison record at offset 2")[0] == 0
    assert cli(capsys, "abort", str(doomed), "--yes")[0] == 0  # already ABORTED: no-op
    assert history(stack.ledger_dsn, doomed) == [
        (None, "RESERVED", "task", "eo_stream/run-2/reserve try 1", "reserved"),
        ("RESERVED", "ABORTED", "eo-ledger", me, "poison record at offset 2"),
    ]

    # eo-ledger epoch ID: the summary plus the history, exactly
    code, shown = cli(capsys, "epoch", str(doomed))
    assert code == 0
    with Ledger(stack.ledger_dsn) as reader:
        aborted = reader.get_epoch(doomed)
        stamps = [t.at.isoformat() for t in reader.history(doomed)]
    assert shown == {
        **json.loads(json.dumps(aborted.to_summary())),
        "spec_digest": aborted.spec_digest,
        "history": [
            {
                "from": None,
                "to": "RESERVED",
                "at": stamps[0],
                "actor_kind": "task",
                "actor": "eo_stream/run-2/reserve try 1",
                "reason": "reserved",
            },
            {
                "from": "RESERVED",
                "to": "ABORTED",
                "at": stamps[1],
                "actor_kind": "eo-ledger",
                "actor": me,
                "reason": "poison record at offset 2",
            },
        ],
    }


def test_pipeline_history_merges_transitions_and_cursor_moves_newest_first(
    stack,
    ledger: Ledger,
    pipeline,
    kafka_topic_factory: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EO_LEDGER_DSN", stack.ledger_dsn)
    me = Actor.cli().name
    topic = kafka_topic_factory(partitions=1, prefix="hist-pipe")
    fill(stack, topic, [3])
    name, _, file = pipeline(topics=[topic])
    reserve = ReserveEpochOperator(task_id="reserve", pipeline=name, pipelines_file=file)
    summary = reserve.execute(context("run-1", "reserve"))
    ledger.abort(summary["epoch_id"], "test")
    assert ledger.cursors(name) == {(topic, 0): 0}
    # a skip, then a rewind, by eo-ledger seek
    for to in ("offset:3", "offset:1"):
        code, _ = cli(
            capsys, "seek", "--pipeline", name, "--to", to, "--reason", REWIND, "--yes",
            "--stream-dag-paused", "--pipelines-file", file,
        )  # fmt: skip
        assert code == 0
    with Ledger(stack.ledger_dsn) as reader:
        moves_at = [e.at.isoformat() for e in reader.pipeline_history(name, 10) if isinstance(e, CursorMove)]
        steps_at = [t.at.isoformat() for t in reader.history(summary["epoch_id"])]
    code, answer = cli(capsys, "history", "--pipeline", name, "--limit", "3")
    assert code == 0
    assert answer == {
        "pipeline": name,
        "limit": 3,
        "events": [
            {
                "event": "cursor_move", "topic": topic, "partition": 0, "from": 3, "to": 1, "kind": "seek",
                "at": moves_at[0], "actor_kind": "eo-ledger", "actor": me, "reason": REWIND,
            },
            {
                "event": "cursor_move", "topic": topic, "partition": 0, "from": 0, "to": 3, "kind": "seek",
                "at": moves_at[1], "actor_kind": "eo-ledger", "actor": me, "reason": REWIND,
            },
            {
                "event": "transition", "epoch_id": summary["epoch_id"], "from": "RESERVED", "to": "ABORTED",
                "at": steps_at[1], "actor_kind": "process", "actor": ledger.actor.name, "reason": "test",
            },
        ],
    }  # fmt: skip
    code, answer = cli(capsys, "history", "--pipeline", name)
    assert [e["event"] for e in answer["events"]] == [
        "cursor_move",
        "cursor_move",
        "transition",
        "transition",
    ]
    unknown = (
        f"unknown pipeline {'nope-' + name!r}: the ledger has no such pipeline (see eo-ledger pipelines)"
    )
    assert cli(capsys, "history", "--pipeline", "nope-" + name) == (2, {"error": unknown, "type": "Refused"})
    assert cli(capsys, "history", "--pipeline", name, "--limit", "0") == (
        2, {"error": "--limit must be >= 1, not 0", "type": "Refused"},
    )  # fmt: skip


def test_the_database_refuses_a_state_change_without_an_actor(
    stack, ledger: Ledger, pipeline, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=1, prefix="hist-raw")
    fill(stack, topic, [1])
    name, _, file = pipeline(topics=[topic])
    epoch_id = ReserveEpochOperator(task_id="reserve", pipeline=name, pipelines_file=file).execute(
        context("run-1", "reserve")
    )["epoch_id"]
    update = (
        "UPDATE eo.epochs SET state = 'ABORTED', error = 'by hand', aborted_at = now() WHERE epoch_id = %s"
    )
    conn = psycopg2.connect(stack.ledger_dsn)
    try:
        with conn.cursor() as cur, pytest.raises(psycopg2.errors.CheckViolation) as refused:
            cur.execute(update, (epoch_id,))
        conn.rollback()
        assert str(refused.value).splitlines()[0] == (
            f"epoch {epoch_id} change RESERVED -> ABORTED names no actor: "
            "set eo.actor_kind and eo.actor in the transaction"
        )
        assert ledger.get_epoch(epoch_id).state == "RESERVED"
        with conn.cursor() as cur:
            label_actor(cur, Actor("eo-ledger", "dba@db1"))
            cur.execute(update, (epoch_id,))
        conn.commit()
    finally:
        conn.close()
    assert ledger.get_epoch(epoch_id).state == "ABORTED"
    assert history(stack.ledger_dsn, epoch_id)[1:] == [
        ("RESERVED", "ABORTED", "eo-ledger", "dba@db1", "by hand")
    ]
