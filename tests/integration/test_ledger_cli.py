"""``eo-ledger``: exact JSON answers, refusals and guards (real PostgreSQL and broker)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import DeadLetter, Epoch, Ledger
from airflow_provider_eo.ledger.model.actors import Actor
from eo_devtools.ledger_direct import reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, make_spec, ranges_of, run_epoch
from tests.kafka_helpers import produce

pytestmark = pytest.mark.integration


@pytest.fixture
def ledger_dsn(stack: StackInfo, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with fresh_database(stack.ledger_dsn) as dsn:
        monkeypatch.setenv("EO_LEDGER_DSN", dsn)
        for name, value in stack.conn_env.items():
            monkeypatch.setenv(name, value)
        yield dsn


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    """Run ``eo-ledger argv``; return (exit code, parsed JSON of stdout or stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


def detail(epoch: Epoch) -> dict[str, Any]:
    return json.loads(json.dumps(epoch.to_summary()))


def test_migrate(ledger_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    every = list(range(1, 8))
    assert cli(capsys, "migrate") == (0, {"applied": every, "versions": every})
    assert cli(capsys, "migrate") == (0, {"applied": [], "versions": every})


def test_pipelines_and_epochs(
    stack: StackInfo,
    ledger_dsn: str,
    capsys: pytest.CaptureFixture[str],
    kafka_topic_factory: Callable[..., str],
) -> None:
    topic = kafka_topic_factory(partitions=1)
    produce(stack.kafka_bootstrap, topic, [(b"k", b"{}")] * 5, partition=0)
    spec = make_spec("orders", topics=[topic])
    hook = EoKafkaHook()
    with Ledger(ledger_dsn) as ledger:
        first = run_epoch(ledger, spec, hook, "r1")
        produce(stack.kafka_bootstrap, topic, [(b"k", b"{}")] * 2, partition=0)
        second = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r2")
        assert first is not None and second is not None
    assert cli(capsys, "pipelines") == (
        0,
        [
            {
                "name": "orders",
                "epochs": {"RESERVED": 1, "WRITTEN": 0, "COMMITTED": 1, "ABORTED": 0},
                "open_epochs": [
                    {"epoch_id": second.epoch_id, "kind": "stream", "state": "RESERVED", "run_id": "r2"}
                ],
                "cursors": [{"topic": topic, "partition": 0, "cursor": 5}],
                "dead_letters": 0,
                "gaps": [],
            }
        ],
    )
    code, epochs = cli(capsys, "epochs", "--pipeline", "orders", "--state", "COMMITTED")
    assert code == 0
    assert epochs == [
        {
            "epoch_id": first.epoch_id,
            "pipeline": "orders",
            "kind": "stream",
            "state": "COMMITTED",
            "dag_id": "d",
            "run_id": "r1",
            "ranges": [{"topic": topic, "partition": 0, "start": 0, "end": 5, "records": 5}],
            "records_total": 5,
            "metrics": {"records": 5},
            "error": None,
            "created_at": first.created_at.isoformat(),
            "written_at": first.written_at.isoformat() if first.written_at else None,
            "committed_at": first.committed_at.isoformat() if first.committed_at else None,
            "aborted_at": None,
        }
    ]
    assert cli(capsys, "epochs", "--limit", "1") == (0, [detail(second)])
    assert cli(capsys, "epochs", "--min-id", str(second.epoch_id), "--kind", "stream") == (
        0,
        [detail(second)],
    )
    assert cli(capsys, "epochs", "--max-id", str(first.epoch_id)) == (0, [epochs[0]])
    code, shown = cli(capsys, "epoch", str(second.epoch_id))
    with Ledger(ledger_dsn) as reader:
        created = reader.history(second.epoch_id)[0].at.isoformat()
    history = [
        {
            "from": None,
            "to": "RESERVED",
            "at": created,
            "actor_kind": "process",
            "actor": Actor.process().name,  # this test's ledger reserved it
            "reason": "reserved",
        }
    ]
    assert (code, shown) == (0, {**detail(second), "spec_digest": second.spec_digest, "history": history})
    assert ranges_of(second) == [(topic, 0, 5, 7)]


def test_commit_and_abort_guards(
    stack: StackInfo,
    ledger_dsn: str,
    capsys: pytest.CaptureFixture[str],
    kafka_topic_factory: Callable[..., str],
) -> None:
    topic = kafka_topic_factory(partitions=1)
    produce(stack.kafka_bootstrap, topic, [(b"k", b"{}")] * 5, partition=0)
    spec = make_spec(topics=[topic])
    with Ledger(ledger_dsn) as ledger:
        epoch = reserve_stream_epoch(ledger, spec, EoKafkaHook(), dag_id="d", run_id="r1")
        assert epoch is not None
        assert cli(capsys, "commit", str(epoch.epoch_id)) == (
            2,
            {"error": f"refusing to commit epoch {epoch.epoch_id} without --yes", "type": "Refused"},
        )
        assert cli(capsys, "abort", str(epoch.epoch_id)) == (
            2,
            {"error": f"refusing to abort epoch {epoch.epoch_id} without --yes", "type": "Refused"},
        )
        assert cli(capsys, "commit", str(epoch.epoch_id), "--yes") == (
            1,
            {
                "error": f"epoch {epoch.epoch_id} is RESERVED: transition RESERVED -> COMMITTED is not "
                "allowed (the epoch has not been written yet)",
                "type": "IllegalTransition",
            },
        )
        ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {"records": 5})
        code, error = cli(capsys, "abort", str(epoch.epoch_id), "--yes")
        assert (code, error["type"]) == (1, "IllegalTransition")
        assert error["error"].startswith(f"epoch {epoch.epoch_id} is WRITTEN: transition WRITTEN -> ABORTED")
        code, aborted = cli(
            capsys, "abort", str(epoch.epoch_id), "--yes", "--allow-written", "--reason", "bad"
        )
        assert code == 0
        assert aborted == detail(ledger.get_epoch(epoch.epoch_id))
        assert (aborted["state"], aborted["error"]) == ("ABORTED", "bad")
        code, error = cli(capsys, "commit", str(epoch.epoch_id), "--yes")
        assert (code, error["type"]) == (1, "IllegalTransition")
    assert cli(capsys, "epoch", "999999") == (
        1,
        {"error": "epoch 999999 does not exist", "type": "EpochNotFound"},
    )


def test_commit_publishes_exact_ends_and_lag(
    stack: StackInfo,
    ledger_dsn: str,
    capsys: pytest.CaptureFixture[str],
    kafka_topic_factory: Callable[..., str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = kafka_topic_factory(partitions=2)
    produce(stack.kafka_bootstrap, topic, [(b"k", b"{}")] * 4, partition=0)
    produce(stack.kafka_bootstrap, topic, [(b"k", b"{}")] * 1, partition=1)
    hook = EoKafkaHook()
    spec = make_spec(topics=[topic], per_partition=3)
    pipelines = tmp_path / "pipelines.yaml"  # a commit looks the epoch's pipeline up there
    entry = {"name": spec.name, "topics": [topic], "group_id": "g-declared", "hbase": {"table": "tbl"}}
    pipelines.write_text(json.dumps({"pipelines": [entry]}))
    monkeypatch.setenv("EO_PIPELINES_FILE", str(pipelines))
    with Ledger(ledger_dsn) as ledger:
        epoch = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r1")
        assert epoch is not None
        ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
        code, answer = cli(capsys, "commit", str(epoch.epoch_id), "--yes", "--group-id", spec.group_id)
        assert code == 0
        assert answer == {
            "epoch": detail(ledger.get_epoch(epoch.epoch_id)),
            "already_committed": False,
            "group_id": spec.group_id,
            "published": [
                {"topic": topic, "partition": 0, "offset": 3},
                {"topic": topic, "partition": 1, "offset": 1},
            ],
            "dead_letters": {
                "pipeline": spec.name,
                "topic": None,
                "published": 0,
                "marker_before": 0,
                "marker_after": 0,
            },
        }
        assert hook.committed_offsets(spec.group_id, [(topic, 0), (topic, 1)]) == {
            (topic, 0): 3,
            (topic, 1): 1,
        }
        code, again = cli(capsys, "commit", str(epoch.epoch_id), "--yes")
        assert (code, again["already_committed"], again["published"]) == (0, True, [])
    assert cli(capsys, "lag", "--pipeline", spec.name) == (
        0,
        {
            "pipeline": spec.name,
            "total_lag": 1,
            "partitions": [
                {
                    "topic": topic,
                    "partition": 0,
                    "cursor": 3,
                    "low_watermark": 0,
                    "high_watermark": 4,
                    "lag": 1,
                },
                {
                    "topic": topic,
                    "partition": 1,
                    "cursor": 1,
                    "low_watermark": 0,
                    "high_watermark": 1,
                    "lag": 0,
                },
            ],
        },
    )


def test_dead_letters(ledger_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Ledger(ledger_dsn) as ledger:
        letter = DeadLetter("orders", "t", 0, 7, None, "missing field user_id", b"k", b"{}", [("h", b"v")])
        assert ledger.record_dead_letters([letter, {**letter.__dict__, "offset": 8, "key": None}]) == 2
        assert ledger.record_dead_letters([letter]) == 1  # a replay overwrites, never duplicates
        assert ledger.dead_letter_count("orders") == 2
    code, answer = cli(capsys, "dead-letters", "--pipeline", "orders")
    assert code == 0
    for row in answer["dead_letters"]:
        assert row.pop("recorded_at")
    assert answer == {
        "pipeline": "orders",
        "count": 2,
        "dead_letters": [
            {
                "pipeline": "orders", "topic": "t", "partition": 0, "offset": offset, "epoch_id": None,
                "error": "missing field user_id", "error_class": None, "timestamp": None,
                "schema_id": None, "publish_seq": None, "resolved_by_epoch": None, "resolved_at": None,
                "key_b64": key, "value_b64": "e30=",
                "headers": [["h", "dg=="]],
            }
            for offset, key in ((7, "aw=="), (8, None))
        ],
    }  # fmt: skip
    code, listed = cli(capsys, "dead-letters", "list", "--pipeline", "orders", "--limit", "1")
    assert (code, listed["count"], [row["offset"] for row in listed["dead_letters"]]) == (0, 2, [7])
    code, listed = cli(capsys, "dead-letters", "--limit", "1", "list", "--pipeline", "orders")
    assert (code, [row["offset"] for row in listed["dead_letters"]]) == (0, [7])
    assert cli(capsys, "dead-letters", "list") == (
        2,
        {"error": "dead-letters needs --pipeline P", "type": "Refused"},
    )


def test_dsn_from_an_airflow_connection(
    ledger_dsn: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    params = parse_dsn(ledger_dsn)
    monkeypatch.delenv("EO_LEDGER_DSN")
    connection = {
        "conn_type": "postgres",
        "host": params["host"],
        "port": int(params["port"]),
        "login": params.get("user"),
        "password": params.get("password"),
        "schema": params["dbname"],
    }
    monkeypatch.setenv("AIRFLOW_CONN_MY_LEDGER", json.dumps(connection))
    assert cli(capsys, "--conn-id", "my_ledger", "migrate") == (
        0,
        {"applied": [1, 2, 3, 4, 5, 6, 7], "versions": [1, 2, 3, 4, 5, 6, 7]},
    )
    monkeypatch.delenv("AIRFLOW_CONN_EO_LEDGER")
    code, error = cli(capsys, "pipelines")
    assert (code, error) == (
        1,
        {
            "error": "connection 'eo_ledger' not found: AIRFLOW_CONN_EO_LEDGER is not set",
            "type": "ConnectionNotFound",
        },
    )
