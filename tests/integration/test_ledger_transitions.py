"""Every epoch transition and guard of the ledger, against real PostgreSQL.

Stream epochs are reserved through the real ``EoKafkaHook`` on one module topic of five
records; every test uses its own pipeline, so each first epoch is exactly ``[0, 5)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import psycopg2
import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import (
    EpochKind,
    EpochNotFound,
    EpochState,
    FencedOut,
    IllegalTransition,
    Ledger,
    LedgerUnavailable,
    PartitionRange,
)
from airflow_provider_eo.ledger.model.epoch import Epoch
from eo_devtools.ledger_direct import reserve_backfill_epoch, reserve_stream_epoch, rotate_fencing_token
from tests.conftest import StackInfo
from tests.integration.ledger_support import make_spec, stack_kafka_hook
from tests.kafka_helpers import created_topic, produce

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def five_records(stack: StackInfo) -> Iterator[tuple[EoKafkaHook, str]]:
    """The real hook and a one-partition topic holding offsets 0..4."""
    with created_topic(stack.kafka_bootstrap, prefix="transitions") as topic:
        produce(stack.kafka_bootstrap, topic, [(f"k{i}", "{}") for i in range(5)], partition=0)
        yield stack_kafka_hook(stack), topic


@pytest.fixture
def reserved(ledger: Ledger, five_records: tuple[EoKafkaHook, str]) -> Callable[[], Epoch]:
    """``reserved()``: a new pipeline's first stream epoch, RESERVED, covering [0, 5)."""
    hook, topic = five_records

    def reserve() -> Epoch:
        epoch = reserve_stream_epoch(ledger, make_spec(topics=[topic]), hook, dag_id="d", run_id="r")
        assert epoch is not None
        return epoch

    return reserve


@pytest.fixture
def written(ledger: Ledger, reserved: Callable[[], Epoch]) -> Callable[[], Epoch]:
    """``written()``: as ``reserved()``, then voted WRITTEN with ``{"records": 5}``."""

    def write() -> Epoch:
        epoch = reserved()
        return ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {"records": 5})

    return write


def test_reserve_vote_commit_happy_path(
    ledger: Ledger, reserved: Callable[[], Epoch], five_records: tuple[EoKafkaHook, str]
) -> None:
    _, topic = five_records
    epoch = reserved()
    assert (epoch.state, epoch.kind, epoch.dag_id, epoch.run_id) == (
        EpochState.RESERVED,
        EpochKind.STREAM,
        "d",
        "r",
    )
    assert epoch.ranges == (PartitionRange(topic, 0, 0, 5),)
    voted = ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {"records": 5, "cells": 10})
    assert voted.state is EpochState.WRITTEN
    assert voted.metrics == {"records": 5, "cells": 10}
    assert voted.written_at is not None
    committed = ledger.mark_committed(epoch.epoch_id)
    assert committed.state is EpochState.COMMITTED
    assert committed.committed_at is not None
    assert ledger.cursors(epoch.pipeline) == {(topic, 0): 5}


def test_commit_of_committed_epoch_is_a_noop_success(ledger: Ledger, written: Callable[[], Epoch]) -> None:
    epoch = written()
    first = ledger.mark_committed(epoch.epoch_id)
    again = ledger.mark_committed(epoch.epoch_id)
    assert again.state is EpochState.COMMITTED
    assert again.committed_at == first.committed_at


def test_commit_of_reserved_epoch_is_rejected(ledger: Ledger, reserved: Callable[[], Epoch]) -> None:
    epoch = reserved()
    with pytest.raises(IllegalTransition) as info:
        ledger.mark_committed(epoch.epoch_id)
    assert str(info.value) == (
        f"epoch {epoch.epoch_id} is RESERVED: transition RESERVED -> COMMITTED is not allowed"
        " (the epoch has not been written yet)"
    )
    assert (info.value.epoch_id, info.value.state, info.value.attempted) == (
        epoch.epoch_id,
        "RESERVED",
        "COMMITTED",
    )
    assert ledger.get_epoch(epoch.epoch_id).state is EpochState.RESERVED


def test_commit_of_aborted_epoch_is_rejected(ledger: Ledger, reserved: Callable[[], Epoch]) -> None:
    epoch = reserved()
    ledger.abort(epoch.epoch_id, "test")
    with pytest.raises(
        IllegalTransition, match=r"is ABORTED: transition ABORTED -> COMMITTED is not allowed"
    ):
        ledger.mark_committed(epoch.epoch_id)


def test_abort_reserved_returns_its_ranges(
    ledger: Ledger, reserved: Callable[[], Epoch], five_records: tuple[EoKafkaHook, str]
) -> None:
    _, topic = five_records
    epoch = reserved()
    aborted = ledger.abort(epoch.epoch_id, "stale")
    assert (aborted.state, aborted.error) == (EpochState.ABORTED, "stale")
    assert aborted.aborted_at is not None
    assert ledger.cursors(epoch.pipeline) == {(topic, 0): 0}
    assert ledger.abort(epoch.epoch_id, "again").error == "stale"  # idempotent no-op


def test_abort_written_needs_explicit_operator_action(ledger: Ledger, written: Callable[[], Epoch]) -> None:
    epoch = written()
    with pytest.raises(IllegalTransition) as info:
        ledger.abort(epoch.epoch_id, "recover")
    assert str(info.value) == (
        f"epoch {epoch.epoch_id} is WRITTEN: transition WRITTEN -> ABORTED is not allowed"
        " (its data is in HBase: commit it, or abort explicitly with allow_written=True / --allow-written)"
    )
    assert ledger.get_epoch(epoch.epoch_id).state is EpochState.WRITTEN
    assert ledger.abort(epoch.epoch_id, "operator", allow_written=True).state is EpochState.ABORTED


def test_abort_committed_is_rejected_even_with_allow_written(
    ledger: Ledger, written: Callable[[], Epoch]
) -> None:
    epoch = written()
    ledger.mark_committed(epoch.epoch_id)
    with pytest.raises(
        IllegalTransition, match=r"is COMMITTED: transition COMMITTED -> ABORTED is not allowed"
    ):
        ledger.abort(epoch.epoch_id, "oops", allow_written=True)
    assert ledger.get_epoch(epoch.epoch_id).state is EpochState.COMMITTED


def test_vote_with_wrong_token_is_fenced_out_and_changes_nothing(
    ledger: Ledger, reserved: Callable[[], Epoch]
) -> None:
    epoch = reserved()
    with pytest.raises(FencedOut) as info:
        ledger.vote_written(epoch.epoch_id, "00000000-0000-0000-0000-000000000000", {"records": 99})
    assert str(info.value) == (
        f"vote on epoch {epoch.epoch_id} fenced out (epoch is RESERVED): "
        "fencing token does not match the epoch's"
    )
    assert ledger.get_epoch(epoch.epoch_id) == epoch


def test_vote_after_token_rotation_is_fenced_out(ledger: Ledger, reserved: Callable[[], Epoch]) -> None:
    epoch = reserved()
    new_token = rotate_fencing_token(ledger, epoch.epoch_id)
    with pytest.raises(FencedOut):
        ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
    assert ledger.vote_written(epoch.epoch_id, new_token, {}).state is EpochState.WRITTEN


def test_vote_on_aborted_epoch_is_fenced_out(ledger: Ledger, reserved: Callable[[], Epoch]) -> None:
    epoch = reserved()
    aborted = ledger.abort(epoch.epoch_id, "recovered")
    with pytest.raises(FencedOut, match="epoch is ABORTED, not RESERVED"):
        ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {"records": 5})
    assert ledger.get_epoch(epoch.epoch_id) == aborted


def test_repeated_vote_with_same_token_is_a_noop(ledger: Ledger, written: Callable[[], Epoch]) -> None:
    epoch = written()
    again = ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {"records": 123})
    assert again.metrics == {"records": 5}
    assert again.written_at == epoch.written_at


def test_unknown_epoch(ledger: Ledger) -> None:
    with pytest.raises(EpochNotFound, match="epoch 987654 does not exist"):
        ledger.mark_committed(987654)


def test_database_trigger_rejects_illegal_transition(
    ledger: Ledger, ledger_dsn: str, reserved: Callable[[], Epoch]
) -> None:
    epoch = reserved()
    conn = psycopg2.connect(ledger_dsn)
    try:
        with (
            pytest.raises(
                psycopg2.errors.CheckViolation, match="illegal epoch transition RESERVED -> COMMITTED"
            ),
            conn.cursor() as cur,
        ):
            cur.execute(
                "UPDATE eo.epochs SET state = 'COMMITTED', committed_at = now() WHERE epoch_id = %s",
                (epoch.epoch_id,),
            )
        conn.rollback()
    finally:
        conn.close()


def test_one_open_stream_epoch_enforced_by_unique_index(
    ledger: Ledger, ledger_dsn: str, reserved: Callable[[], Epoch]
) -> None:
    epoch = reserved()
    conn = psycopg2.connect(ledger_dsn)
    try:
        with pytest.raises(psycopg2.errors.UniqueViolation), conn.cursor() as cur:
            cur.execute(
                "INSERT INTO eo.epochs (pipeline, kind, fencing_token, dag_id, run_id)"
                " VALUES (%s, 'stream', gen_random_uuid(), 'x', 'y')",
                (epoch.pipeline,),
            )
        conn.rollback()
    finally:
        conn.close()


def test_backfill_epoch_lifecycle_and_validation(ledger: Ledger) -> None:
    spec = make_spec(topics=["t"])
    ranges = [PartitionRange("t", 1, 10, 20), PartitionRange("t", 0, 0, 5)]
    epoch = reserve_backfill_epoch(ledger, spec, ranges, dag_id="bf", run_id="r1")
    assert epoch.kind is EpochKind.BACKFILL
    assert epoch.ranges == (PartitionRange("t", 0, 0, 5), PartitionRange("t", 1, 10, 20))
    assert reserve_backfill_epoch(ledger, spec, ranges, dag_id="bf", run_id="r1") == epoch
    other = reserve_backfill_epoch(ledger, spec, ranges, dag_id="bf", run_id="r2")
    assert other.epoch_id != epoch.epoch_id
    assert ledger.cursors(spec.name) == {}
    from airflow_provider_eo.ledger import InvalidRanges, OpenEpochConflict

    with pytest.raises(OpenEpochConflict):
        reserve_backfill_epoch(ledger, spec, [PartitionRange("t", 0, 0, 1)], dag_id="bf", run_id="r1")
    with pytest.raises(InvalidRanges, match=r"range t\[0\] \[5, 5\) must have 0 <= start < end"):
        reserve_backfill_epoch(ledger, spec, [PartitionRange("t", 0, 5, 5)], dag_id="bf", run_id="r3")
    with pytest.raises(InvalidRanges, match=r"outside the available offsets \[0, 8\)"):
        reserve_backfill_epoch(
            ledger,
            spec,
            [PartitionRange("t", 0, 5, 9)],
            dag_id="bf",
            run_id="r3",
            watermarks={("t", 0): (0, 8)},
        )
    ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
    assert ledger.mark_committed(epoch.epoch_id).state is EpochState.COMMITTED
    assert ledger.cursors(spec.name) == {}
    assert [e.epoch_id for e in ledger.open_epochs(spec.name, EpochKind.BACKFILL)] == [other.epoch_id]


def test_broken_connection_is_replaced_on_the_next_call(ledger: Ledger, ledger_dsn: str) -> None:
    spec = make_spec(topics=["t"])
    reserve_backfill_epoch(ledger, spec, [PartitionRange("t", 0, 0, 1)], dag_id="d", run_id="r")
    with ledger.transaction() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    killer = psycopg2.connect(ledger_dsn)
    try:
        with killer.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(%s)", (pid,))
        killer.commit()
    finally:
        killer.close()
    with pytest.raises(LedgerUnavailable, match=r"epoch ledger unavailable at .*nothing was changed"):
        ledger.list_pipelines()
    assert spec.name in ledger.list_pipelines()
