"""The audit stays silent where it should: 10,000 records over two partitions (300 keys
updated again and again, tombstones, bad records dead-lettered and published to a real
dead-letter topic), written by stream epochs (the first through ``spark-submit``, the rest
in-process), a backward ``eo-ledger seek`` re-read by later stream epochs, a replay of one
epoch's dead letters and a backfill over two epochs' offsets; ``eo-ledger audit`` of every
committed epoch says ``clean`` with exact counts, reading only.

Epochs (``max_records_per_partition`` 1,500; partitions of 5,000 records each):
stream [0,1500) [1500,3000) [3000,4500); seek back to 2000; stream [2000,3500) [3500,5000);
the replay of the first epoch's dead letters; a backfill of partition 1 [500,2200).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.ledger import Epoch, Ledger, PartitionRange
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.ledger.protocol import EpochProtocol, Reserved
from airflow_provider_eo.operators.backfill_request_form import request_of
from eo_devtools.demo.topic_records import read_topic
from tests.conftest import StackInfo
from tests.integration.dead_letter_support import World, dead_letter_world, replay_selection_rows
from tests.integration.ledger_support import fresh_database
from tests.integration.spark_submit import spark_env, submit_write
from tests.integration.test_audit import audit, pipelines_yaml
from tests.kafka_helpers import RecordSender

pytestmark = [pytest.mark.integration, pytest.mark.spark]

RECORDS = 10_000
KEYS = 300
OPTIONS: dict[str, Any] = {"caps": {"max_records_per_partition": 1500}}


def value(i: int) -> bytes | None:
    """Record ``i``: every 149th bad JSON, every 97th a tombstone, else an update of its key."""
    if i % 149 == 148:
        return b"not json"
    if i % 97 == 96:
        return None
    return json.dumps({"n": i, "g": i % 7}).encode()


def replay(world: World, epoch_id: int) -> list[Epoch]:
    """The backfill DAG's run for a replay of ``epoch_id``'s dead letters, in-process."""
    run = RunIdentity(dag_id=f"eo_backfill__{world.spec.name}", run_id=f"manual-{uuid.uuid4().hex[:6]}")
    params = {"topics": [], "start_offset": None, "replay_dead_letters": {"epoch": epoch_id}}
    done = []
    with world.trip.connections(), Ledger(world.ledger_dsn) as ledger:
        protocol = EpochProtocol(ledger, kafka=lambda: world.trip.kafka)
        for chunk in protocol.plan_backfill(world.spec, request_of(params=params)):
            form = json.loads(json.dumps([r.to_summary() for r in chunk]))
            reserved = protocol.reserve_backfill(world.spec, request_of(form), run)
            assert isinstance(reserved, Reserved)
            done.append(reserved.epoch)
    return [world.trip.write_and_commit(epoch) for epoch in done]


@pytest.fixture(scope="module")
def world(stack: StackInfo) -> Iterator[World]:
    with (
        fresh_database(stack.ledger_dsn) as dsn,
        dead_letter_world(stack, dsn, partitions=2, **OPTIONS) as found,
    ):
        found.trip.dead_letter_topics = None  # the commits publish to the real dead-letter topic
        sender = RecordSender(stack.kafka_bootstrap)
        for i in range(RECORDS):
            key = i % KEYS
            sender.send(found.source, f"k{key}", value(i), partition=key % 2)  # a row in one partition
        sender.flush()
        yield found


def expected_offsets(
    epochs: list[Epoch], replays: dict[int, list[tuple[str, int, int]]], bad: dict[tuple[int, int], bool]
) -> dict[str, int]:
    """The audit's ``offsets`` for ``epochs``: a plain range's records written or dead letters
    (the bad ones), a replay's selected offsets dead letters again (still bad), the rest skipped."""
    found = {"ranges": 0, "offsets": 0, "records_written": 0, "dead_letters": 0, "skipped_offsets": 0}
    for epoch in epochs:
        for r in epoch.ranges:
            size = r.end - r.start
            found["ranges"] += 1
            found["offsets"] += size
            if epoch.epoch_id in replays:
                chosen = [
                    o for _t, p, o in replays[epoch.epoch_id] if p == r.partition and r.start <= o < r.end
                ]
                assert all(bad[(r.partition, o)] for o in chosen)
                found["dead_letters"] += len(chosen)
                found["skipped_offsets"] += size - len(chosen)
            else:
                refused = sum(bad[(r.partition, o)] for o in range(r.start, r.end))
                found["dead_letters"] += refused
                found["records_written"] += size - refused
    return found


def test_ten_thousand_records_audited_clean(
    world: World, stack: StackInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trip, name = world.trip, world.spec.name
    file = pipelines_yaml(world, tmp_path, OPTIONS)
    first = trip.reserve()
    assert first is not None
    result = submit_write(file, name, first.epoch_id, spark_env(trip.env))
    assert result.returncode == 0, result.output[-4000:]
    trip.commit(first.epoch_id)
    assert trip.run_stream_epoch() is not None  # [1500, 3000)
    assert trip.run_stream_epoch() is not None  # [3000, 4500)
    with trip.connections():
        moved = main(
            ["--dsn", world.ledger_dsn, "seek", "--pipeline", name, "--to", "offset:2000", "--reason",
             "re-read", "--yes", "--stream-dag-paused", "--group-id", world.spec.group_id,
             "--pipelines-file", str(file)]
        )  # fmt: skip
    assert moved == 0
    while trip.run_stream_epoch() is not None:  # [2000, 3500), [3500, 5000)
        pass
    replays = {
        e.epoch_id: replay_selection_rows(world.ledger_dsn, e.epoch_id) for e in replay(world, first.epoch_id)
    }
    trip.write_and_commit(trip.reserve_backfill([PartitionRange(world.source, 1, 500, 2200)]))

    with Ledger(world.ledger_dsn) as ledger:
        epochs = ledger.epochs(EpochFilter(pipeline=name))
    assert {e.state for e in epochs} == {EpochState.COMMITTED}
    streams = [e for e in epochs if e.kind == EpochKind.STREAM]
    assert [sorted((r.partition, r.start, r.end) for r in e.ranges) for e in streams] == [
        [(0, 0, 1500), (1, 0, 1500)], [(0, 1500, 3000), (1, 1500, 3000)], [(0, 3000, 4500), (1, 3000, 4500)],
        [(0, 2000, 3500), (1, 2000, 3500)], [(0, 3500, 5000), (1, 3500, 5000)],
    ]  # fmt: skip
    assert replays and all(replays.values())
    bad = {
        (r.partition, r.offset): r.value == b"not json"
        for r in read_topic(stack.kafka_bootstrap, world.source, 2)
    }
    assert (len(bad), sum(bad.values())) == (RECORDS, RECORDS // 149)
    letters = len(world.read())
    assert letters == RECORDS // 149  # each published once

    code, answer = audit(world, file, "--pipeline", name, "--last", str(len(epochs)), capsys=capsys)
    assert answer["findings"] == [], json.dumps(answer["findings"][:20], indent=1)
    assert (code, answer["verdict"], answer["findings_total"]) == (0, "clean", 0)
    assert answer["window"]["epochs"] == len(epochs) == 5 + len(replays) + 1
    assert answer["offsets"] == expected_offsets(epochs, replays, bad)
    assert answer["not_auditable"] == []
    assert answer["dead_letter_topic"] == {"letters": letters, "published": letters, "seen": letters}
    assert answer["cells"]["verified"] > 0 and answer["cells"]["deletes_verified"] > 0
    assert trip.group_offsets((0, 1)) == {0: 5000, 1: 5000}  # the audit moved nothing
