"""The backfill DAG's Trigger form "the dead letters of epoch N" through real Airflow
(``airflow dags test``), spark-submit, Kafka, HBase and the ledger.

A stream epoch (written in-process, no Spark) dead-letters a record larger than
``mapping.max_record_bytes`` and a malformed one; the fix raises the limit; the backfill
DAG run with ``dead_letters_of_epoch`` writes exactly the fixed record through Spark,
resolves it naming its epoch, and keeps the malformed one as one unresolved dead letter; a
second run with the run conf's generic filter (what ``eo-ledger dead-letters replay`` sends)
replays the malformed one by its reason: it fails again and stays one unresolved row.
"""

from __future__ import annotations

import json

import happybase
import pytest

from airflow_provider_eo.dag_ids import backfill_dag_id
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from tests.airflow.conftest import PipelineFactory
from tests.conftest import StackInfo
from tests.integration.dead_letter_support import dead_letter_rows, replay_selection_rows
from tests.integration.epoch_round_trip import EpochRoundTrip
from tests.kafka_helpers import produce

pytestmark = pytest.mark.airflow

BIG = json.dumps({"i": 1, "pad": "x" * 80}).encode()


def timed_scan(hbase: happybase.Connection, table: str) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
    return {row: dict(cells) for row, cells in hbase.table(table).scan(include_timestamp=True)}


def test_trigger_form_replays_the_dead_letters_of_an_epoch(
    stack: StackInfo, pipeline_factory: PipelineFactory, ledger: Ledger, hbase: happybase.Connection
) -> None:
    pipe = pipeline_factory(partitions=1, bad_records="dead_letter", mapping={"max_record_bytes": 64})
    topic, name = pipe.topic, pipe.spec.name
    produce(
        stack.kafka_bootstrap,
        topic,
        [(b"k0", b'{"i": 0}'), (b"k1", BIG), (b"k2", b"{broken"), (b"k3", b'{"i": 3}')],
        partition=0,
    )
    stream = EpochRoundTrip(pipe.spec, stack.ledger_dsn, stack.conn_env).run_stream_epoch()
    assert stream is not None and (stream.metrics or {})["bad_records"] == 2
    assert [row[:4] for row in dead_letter_rows(stack.ledger_dsn, name)] == [
        (1, stream.epoch_id, None, False),
        (2, stream.epoch_id, None, False),
    ]
    before = timed_scan(hbase, pipe.spec.hbase_table)
    assert sorted(before) == [b"k0", b"k3"]

    pipe = pipe.redeclare(mapping={"max_record_bytes": 4096})  # the fix
    outcome = pipe.runner.run(backfill_dag_id(name), conf={"dead_letters_of_epoch": stream.epoch_id})
    assert outcome.state == "success", outcome.log[-6000:]

    (replay,) = ledger.epochs(EpochFilter(pipeline=name, kind=EpochKind.BACKFILL))
    assert (replay.state, replay.run_id) == (EpochState.COMMITTED, outcome.run_id)
    assert [(r.topic, r.partition, r.start, r.end) for r in replay.ranges] == [(topic, 0, 1, 3)]
    assert replay_selection_rows(stack.ledger_dsn, replay.epoch_id) == [(topic, 0, 1), (topic, 0, 2)]
    metrics = replay.metrics or {}
    assert (metrics["records"], metrics["skipped_offsets"], metrics["bad_records"]) == (2, 0, 1)

    after = timed_scan(hbase, pipe.spec.hbase_table)
    assert sorted(after) == [b"k0", b"k1", b"k3"]
    assert (after[b"k0"], after[b"k3"]) == (before[b"k0"], before[b"k3"])  # values and versions
    # offsets 1 and 2 are both selected, but 2 fails again: as a dead letter it closes the
    # segment before it, so offset 1 is versioned by its own offset (1)
    assert after[b"k1"] == {b"d:i": (b"1", 1), b"d:pad": (b"x" * 80, 1)}
    assert [row[:4] for row in dead_letter_rows(stack.ledger_dsn, name)] == [
        (1, stream.epoch_id, replay.epoch_id, True),
        (2, replay.epoch_id, None, False),
    ]

    # the generic form (what eo-ledger dead-letters replay sends): the still-broken record
    # by its reason; it fails again, stays one unresolved row, now the new epoch's
    conf = {"replay_dead_letters": {"reason": "NOT VALID JSON"}}
    again = pipe.runner.run(backfill_dag_id(name), conf=conf)
    assert again.state == "success", again.log[-6000:]
    _, second = ledger.epochs(EpochFilter(pipeline=name, kind=EpochKind.BACKFILL))
    assert (second.state, second.run_id) == (EpochState.COMMITTED, again.run_id)
    assert replay_selection_rows(stack.ledger_dsn, second.epoch_id) == [(topic, 0, 2)]
    assert [row[:4] for row in dead_letter_rows(stack.ledger_dsn, name)] == [
        (1, stream.epoch_id, replay.epoch_id, True),
        (2, second.epoch_id, None, False),
    ]
    assert timed_scan(hbase, pipe.spec.hbase_table) == after
