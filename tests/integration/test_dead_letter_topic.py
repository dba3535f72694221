"""The dead-letter topic on the real stack: its exact contents, and exactly once under
repeated publications, crashes before and after the Kafka commit, a zombie publisher, a
re-commit by recovery and a write retried after a killed attempt; the commit task and
``eo-ledger dead-letters publish`` as callers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.clients.dead_letter_topic import DeadLetterTopic, DeadLetterTopicMissing
from airflow_provider_eo.clients.kafka_errors import EoKafkaError
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.epoch import OutgoingRecord
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.planning.recovery_plan import Action
from airflow_provider_eo.ledger.protocol.dead_letter_publication import (
    DeadLetterPublication,
    publish_dead_letters,
)
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.spark.driver.task_settings import task_settings
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.task.write_task import run_task
from eo_devtools.demo.topic_records import count_committed_records
from tests.faults.crash_points import REPO, crash_env, listening
from tests.integration.dead_letter_support import (  # noqa: F401 (fixtures)
    TopicRecord,
    World,
    by_key_partition,
    ledger_dsn_fixture,
    world_fixture,
)
from tests.kafka_helpers import produce, recent_timestamp_ms
from tests.task_context import task_context

pytestmark = pytest.mark.integration

#: Recent enough for the broker's retention (an old timestamp's segment may be deleted at once).
T0 = recent_timestamp_ms()
BAD_JSON = "value is not valid JSON: Expecting value: line 1 column 1 (char 0)"


def fill(world: World, values: list[str], start: int = 0) -> None:
    """Records ``k<i>`` -> ``values[i]`` with header ``h=x<i>`` and timestamps ``T0 + i``."""
    for i, value in enumerate(values, start):
        produce(
            world.stack.kafka_bootstrap, world.source, [(f"k{i}", value)],
            headers=[("h", f"x{i}".encode())], timestamps=[T0 + i],
        )  # fmt: skip


def expected(world: World, offset: int, epoch_id: int, value: str) -> TopicRecord:
    """The topic's record of the bad record at ``offset`` (as :func:`fill` produced it)."""
    return (
        f"k{offset}".encode(),
        value.encode(),
        [
            ("h", f"x{offset}".encode()),
            ("__eo.errors.class", b"BadRecord"),
            ("__eo.errors.message", BAD_JSON.encode()),
            ("__eo.source.topic", world.source.encode()),
            ("__eo.source.partition", b"0"),
            ("__eo.source.offset", str(offset).encode()),
            ("__eo.source.timestamp", str(T0 + offset).encode()),
            ("__eo.pipeline", world.spec.name.encode()),
            ("__eo.epoch_id", str(epoch_id).encode()),
        ],
    )


def outcome(world: World, published: int, before: int, after: int) -> DeadLetterPublication:
    return DeadLetterPublication(world.spec.name, world.dlq, published, before, after)


def committed_epoch(world: World, values: list[str], start: int = 0) -> int:
    """Produce ``values`` and run one stream epoch through write and commit; its id."""
    fill(world, values, start)
    epoch = world.trip.run_stream_epoch()
    assert epoch is not None
    return epoch.epoch_id


def raising_at(point: str) -> Callable[[str], None]:
    def listener(name: str) -> None:
        if name == point:
            raise RuntimeError(f"crash at {point}")

    return listener


def test_exact_contents_and_a_second_publication_adds_nothing(world: World) -> None:
    epoch_id = committed_epoch(world, ['{"a":1}', "bad-1", '{"a":2}', "bad-3"])
    assert world.read() == by_key_partition([])  # committing numbers the letters; publishing sends them
    assert world.publish() == outcome(world, 2, 0, 2)
    want = [expected(world, 1, epoch_id, "bad-1"), expected(world, 3, epoch_id, "bad-3")]
    assert world.read() == by_key_partition(want)
    assert world.publish() == outcome(world, 0, 2, 2)
    assert (world.read(), world.marker()) == (by_key_partition(want), 2)
    assert count_committed_records(world.stack.kafka_bootstrap, world.dlq) == 2  # the demo's count


def test_a_crash_after_the_kafka_commit_is_continued_from_the_marker(world: World) -> None:
    epoch_id = committed_epoch(world, ["bad-0", "bad-1", "bad-2"])
    crash = raising_at("dead_letters.after_commit")
    with listening(crash), pytest.raises(RuntimeError, match="after_commit"):
        world.publish()
    want = [expected(world, i, epoch_id, f"bad-{i}") for i in range(3)]
    assert (world.read(), world.marker()) == (
        by_key_partition(want),
        3,
    )  # one batch: all three, marker with them
    assert world.publish() == outcome(world, 0, 3, 3)
    assert world.read() == by_key_partition(want)


def test_a_crash_between_batches_keeps_the_first_and_publishes_the_rest_once(world: World) -> None:
    epoch_id = committed_epoch(world, ["bad-0", "bad-1", "bad-2"])
    with (
        Ledger(world.ledger_dsn) as ledger,
        listening(raising_at("dead_letters.after_commit")),
        pytest.raises(RuntimeError, match="after_commit"),
    ):
        publish_dead_letters(ledger, world.spec.name, world.dlq, world.topic(), batch_records=1)
    want = [expected(world, i, epoch_id, f"bad-{i}") for i in range(3)]
    assert (world.read(), world.marker()) == (by_key_partition(want[:1]), 1)
    assert world.publish() == outcome(world, 2, 1, 3)
    assert world.read() == by_key_partition(want)


def test_a_crash_before_the_kafka_commit_shows_nothing_and_the_retry_publishes_once(world: World) -> None:
    epoch_id = committed_epoch(world, ["bad-0", '{"a":1}', "bad-2"])
    crash = raising_at("dead_letters.before_commit")
    with listening(crash), pytest.raises(RuntimeError, match="before_commit"):
        world.publish()
    assert world.read() == by_key_partition(
        []
    )  # the transaction is open (its marker unreadable): nothing visible
    assert world.publish() == outcome(world, 2, 0, 2)  # init_transactions aborted it
    assert world.read() == by_key_partition(
        [expected(world, 0, epoch_id, "bad-0"), expected(world, 2, epoch_id, "bad-2")]
    )


def test_a_zombie_publisher_is_fenced(world: World) -> None:
    epoch_id = committed_epoch(world, ["bad-0"])
    zombie = world.topic()
    assert zombie.open() == 0
    assert world.publish() == outcome(world, 1, 0, 1)  # the newer publisher fences the zombie
    stale = OutgoingRecord(b"k0", b"bad-0", [])
    with pytest.raises(EoKafkaError, match="dead-letter topic"):
        zombie.publish([stale], 1)
    zombie.close()
    assert (world.read(), world.marker()) == (by_key_partition([expected(world, 0, epoch_id, "bad-0")]), 1)


def test_a_recommit_by_recovery_publishes_once(world: World) -> None:
    fill(world, ["bad-0", "bad-1"])
    epoch = world.trip.reserve(run_id="dead-run")
    assert epoch is not None
    world.trip.write(epoch.epoch_id)  # WRITTEN, the run died before its commit
    with Ledger(world.ledger_dsn) as ledger:
        protocol = world.protocol(ledger)
        settled = protocol.recover(world.spec, RunIdentity("d", "new-run"), lambda _run: False)
        assert settled.plan.ids(Action.COMMIT) == [epoch.epoch_id]
        assert protocol.publish_dead_letters(world.spec) == outcome(world, 0, 2, 2)
        protocol.commit(epoch.epoch_id, pipeline=world.spec)  # a no-op re-commit
    assert world.publish() == outcome(world, 0, 2, 2)
    assert world.read() == by_key_partition(
        [expected(world, i, epoch.epoch_id, f"bad-{i}") for i in range(2)]
    )


def test_a_write_retried_after_a_killed_attempt_publishes_each_letter_once(world: World) -> None:
    fill(world, ["bad-0", '{"a":1}', "bad-2"])
    epoch = world.trip.reserve()
    assert epoch is not None
    with world.trip.connections():
        settings = task_settings(world.spec, epoch.epoch_id)
    run_task(settings, TaskRange(world.source, 0, 0, 3))  # the killed attempt's tasks: letters in PG
    world.trip.write_and_commit(epoch)  # the retry writes them again, votes, commits
    with Ledger(world.ledger_dsn) as ledger:
        rows = ledger.list_dead_letters(world.spec.name)
    assert [(r["offset"], r["epoch_id"], r["publish_seq"]) for r in rows] == [
        (0, epoch.epoch_id, 0),
        (2, epoch.epoch_id, 1),
    ]
    assert world.publish() == outcome(world, 2, 0, 2)
    assert world.read() == by_key_partition(
        [expected(world, 0, epoch.epoch_id, "bad-0"), expected(world, 2, epoch.epoch_id, "bad-2")]
    )


def test_the_commit_task_publishes_and_its_retry_finishes_nothing_twice(world: World) -> None:
    fill(world, ["bad-0", '{"a":1}'])
    epoch = world.trip.reserve()
    assert epoch is not None
    world.trip.write(epoch.epoch_id)
    op = CommitEpochOperator(
        task_id="commit", pipeline=world.spec.name, spec=world.spec, epoch_id=epoch.epoch_id
    )
    with world.trip.connections():
        first = op.execute(task_context())  # type: ignore[arg-type]
        retried = op.execute(task_context())  # type: ignore[arg-type]
    assert (first["action"], first["dead_letters"]) == ("committed", outcome(world, 1, 0, 1).to_json())
    assert (retried["action"], retried["dead_letters"]) == ("noop", outcome(world, 0, 1, 1).to_json())
    assert world.read() == by_key_partition([expected(world, 0, epoch.epoch_id, "bad-0")])


def test_eo_ledger_dead_letters_publish(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    epoch_id = committed_epoch(world, ["bad-0", "bad-1"])  # committed, not yet published
    file = world.pipelines_file(tmp_path)
    monkeypatch.setenv("EO_LEDGER_DSN", world.ledger_dsn)
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", world.trip.env["AIRFLOW_CONN_EO_KAFKA"])

    def cli(*argv: str) -> tuple[int, Any]:
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, json.loads(out if code == 0 else err.strip().splitlines()[-1])

    publish = ("dead-letters", "publish", "--pipelines-file", str(file), "--pipeline")
    assert cli(*publish, world.spec.name) == (0, outcome(world, 2, 0, 2).to_json())
    assert cli(*publish, world.spec.name) == (0, outcome(world, 0, 2, 2).to_json())
    code, refusal = cli(*publish, "nope")
    assert (code, refusal["type"]) == (2, "Refused")
    assert "'nope'" in refusal["error"]
    assert world.read() == by_key_partition([expected(world, i, epoch_id, f"bad-{i}") for i in range(2)])


def test_a_missing_topic_is_an_error_naming_pipeline_and_topic(world: World) -> None:
    missing = DeadLetterTopic(world.spec.name, "no-such-dlq-topic", "g", world.topic().settings)
    with pytest.raises(DeadLetterTopicMissing) as info:
        missing.open()
    assert str(info.value) == (
        f"pipeline {world.spec.name!r}: dead-letter topic 'no-such-dlq-topic' does not exist "
        "(create it; nothing creates it automatically)"
    )


def commit_step(
    world: World, file: Path, epoch_id: int, faults: str = ""
) -> subprocess.CompletedProcess[str]:
    """The commit task in its own process (``tests.faults.steps``), ``faults`` armed (SIGKILL)."""
    env = {**os.environ, **world.trip.env, **(crash_env(faults) if faults else {})}
    argv = ["--pipeline", world.spec.name, "--pipelines-file", str(file), "--dag-id", "d", "--run-id", "r"]
    return subprocess.run(
        [sys.executable, "-m", "tests.faults.steps", "commit", *argv, "--epoch-id", str(epoch_id)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_commit_tasks_killed_before_and_after_the_kafka_commit(world: World, tmp_path: Path) -> None:
    fill(world, ["bad-0", "bad-1"])
    epoch = world.trip.reserve()
    assert epoch is not None
    world.trip.write(epoch.epoch_id)
    file = world.pipelines_file(tmp_path)
    killed = commit_step(world, file, epoch.epoch_id, "dead_letters.before_commit")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert world.read() == by_key_partition(
        []
    )  # COMMITTED in the ledger; the Kafka transaction never committed
    killed = commit_step(world, file, epoch.epoch_id, "dead_letters.after_commit")  # the task's retry
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    want = [expected(world, i, epoch.epoch_id, f"bad-{i}") for i in range(2)]
    assert (world.read(), world.marker()) == (by_key_partition(want), 2)
    last = commit_step(world, file, epoch.epoch_id)  # the next retry: a no-op commit, nothing to publish
    assert last.returncode == 0, last.stderr[-2000:]
    answer = json.loads(last.stdout.strip().splitlines()[-1])
    assert (answer["action"], answer["dead_letters"]) == ("noop", outcome(world, 0, 2, 2).to_json())
    assert world.read() == by_key_partition(want)
