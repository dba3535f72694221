"""Every way an epoch becomes COMMITTED publishes its dead letters: the commit task, the
stream run's recovery, the backfill run's release and ``eo-ledger commit`` each go through
the protocol's one commit path (``ledger/protocol/commit_path.py``), so the epoch's bad
records are in the pipeline's dead-letter topic exactly once when that path returns, with
no later commit and no ``eo-ledger dead-letters publish``. Real Kafka, HBase and ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.recover import RecoverEpochsOperator
from airflow_provider_eo.operators.release import ReleaseEpochOperator
from tests.integration.dead_letter_support import World, ledger_dsn_fixture, world_fixture  # noqa: F401 (fixtures)
from tests.kafka_helpers import produce
from tests.task_context import task_context

pytestmark = pytest.mark.integration

VALUES = ["bad-0", '{"a":1}', "bad-2"]  # offsets 0 and 2 are dead letters


def written_stream_epoch(world: World, run_id: str) -> Epoch:
    """:data:`VALUES` produced, then one stream epoch of ``run_id`` reserved and written
    (its two dead letters in the ledger), not committed."""
    produce(world.stack.kafka_bootstrap, world.source, [(f"k{i}", v) for i, v in enumerate(VALUES)])
    epoch = world.trip.reserve(run_id=run_id)
    assert epoch is not None
    assert world.trip.write(epoch.epoch_id) == 0
    return epoch


def letters_in_topic(world: World) -> list[tuple[bytes, bytes, str]]:
    """(key, value, epoch id header) of every record the dead-letter topic holds (every
    partition), by key."""
    found = []
    for records in world.read().values():
        for key, value, headers in records:
            assert key is not None and value is not None
            found.append((key, value, dict(headers)["__eo.epoch_id"].decode()))
    return sorted(found)


def state(world: World, epoch_id: int) -> EpochState:
    with Ledger(world.ledger_dsn) as ledger:
        return ledger.get_epoch(epoch_id).state


def expected(epoch_id: int) -> list[tuple[bytes, bytes, str]]:
    return [(b"k0", b"bad-0", str(epoch_id)), (b"k2", b"bad-2", str(epoch_id))]


def test_the_commit_task_publishes_its_epochs_dead_letters(world: World) -> None:
    epoch = written_stream_epoch(world, "run-1")
    op = CommitEpochOperator(
        task_id="commit", pipeline=world.spec.name, spec=world.spec, epoch_id=epoch.epoch_id
    )
    with world.trip.connections():
        answer = op.execute(task_context("run-1"))  # type: ignore[arg-type]
    assert (answer["action"], answer["dead_letters"]["published"]) == ("committed", 2)
    assert state(world, epoch.epoch_id) is EpochState.COMMITTED
    assert letters_in_topic(world) == expected(epoch.epoch_id)


def test_recovery_publishes_the_dead_letters_of_what_it_recommits(world: World) -> None:
    epoch = written_stream_epoch(world, "crashed-run")  # WRITTEN, its run died before the commit
    op = RecoverEpochsOperator(task_id="recover", pipeline=world.spec.name, spec=world.spec)
    with world.trip.connections():
        answer = op.execute(task_context("next-run"))  # type: ignore[arg-type]
    assert answer["recommitted"] == [epoch.epoch_id]
    assert state(world, epoch.epoch_id) is EpochState.COMMITTED
    assert letters_in_topic(world) == expected(epoch.epoch_id)


def test_the_backfill_release_publishes_the_dead_letters_of_what_it_commits(world: World) -> None:
    produce(world.stack.kafka_bootstrap, world.source, [(f"k{i}", v) for i, v in enumerate(VALUES)])
    epoch = world.trip.reserve_backfill([PartitionRange(world.source, 0, 0, 3)])
    assert world.trip.write(epoch.epoch_id) == 0  # WRITTEN; the chunk's commit task failed
    op = ReleaseEpochOperator(task_id="release", pipeline=world.spec.name, spec=world.spec)
    with world.trip.connections():
        answer = op.execute(task_context(epoch.run_id, dag_id=epoch.dag_id))  # type: ignore[arg-type]
    assert (answer["committed"], answer["aborted"]) == ([epoch.epoch_id], [])
    assert state(world, epoch.epoch_id) is EpochState.COMMITTED
    assert letters_in_topic(world) == expected(epoch.epoch_id)


def test_eo_ledger_commit_publishes_the_epochs_dead_letters(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    epoch = written_stream_epoch(world, "run-1")
    monkeypatch.setenv("EO_LEDGER_DSN", world.ledger_dsn)
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", world.trip.env["AIRFLOW_CONN_EO_KAFKA"])
    file = world.pipelines_file(tmp_path)
    capsys.readouterr()
    code = main(["commit", str(epoch.epoch_id), "--yes", "--pipelines-file", str(file)])
    out, err = capsys.readouterr()
    assert code == 0, err
    answer: dict[str, Any] = json.loads(out)
    assert (answer["already_committed"], answer["dead_letters"]["published"]) == (False, 2)
    assert answer["published"] == [{"topic": world.source, "partition": 0, "offset": 3}]
    assert state(world, epoch.epoch_id) is EpochState.COMMITTED
    assert letters_in_topic(world) == expected(epoch.epoch_id)
