"""The schema's trigger agrees with ``states.TRANSITIONS``, pair by pair, against real PostgreSQL.

Every ordered pair of states is tried with a raw ``UPDATE eo.epochs SET state = ...`` that
bypasses the Python guards. The timestamps are set as the CHECK constraints want them for
the target state, so the trigger alone decides. Operator-only moves count as allowed: the
database cannot know who asks.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest

from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.ledger.model.refusals import IllegalTransition
from airflow_provider_eo.ledger.model.states import EpochState, is_allowed
from airflow_provider_eo.ledger.store import commit_statements, epoch_transitions
from airflow_provider_eo.ledger.store.migrate import apply_migrations
from airflow_provider_eo.ledger.store.transaction_labels import label_actor

pytestmark = pytest.mark.integration

PIPELINE = "transition-table"
TOKEN = str(uuid.uuid4())
STATE_COLUMNS = "state = %s, written_at = %s, committed_at = %s, aborted_at = %s"


def state_row(state: EpochState) -> tuple[str, str | None, str | None, str | None]:
    """``(state, written_at, committed_at, aborted_at)`` satisfying the table's CHECKs."""
    now = "2024-01-01T00:00:00Z"
    written = now if state in (EpochState.WRITTEN, EpochState.COMMITTED) else None
    committed = now if state is EpochState.COMMITTED else None
    aborted = now if state is EpochState.ABORTED else None
    return state.value, written, committed, aborted


@pytest.fixture(scope="module")
def schema(ledger_dsn: str) -> str:
    """The module's ledger DSN, migrated, with the table's pipeline."""
    connection = psycopg2.connect(ledger_dsn)
    try:
        apply_migrations(connection)
        with connection.cursor() as cur:
            cur.execute("INSERT INTO eo.pipelines (name) VALUES (%s)", (PIPELINE,))
        connection.commit()
    finally:
        connection.close()
    return ledger_dsn


@pytest.fixture
def conn(schema: str) -> Iterator[Any]:
    """A raw connection of this test alone (a failed statement cannot leak into the next test),
    naming itself the actor of its changes for the session (the history trigger needs one)."""
    connection = psycopg2.connect(schema)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT set_config('eo.actor_kind', 'process', false), set_config('eo.actor', 'test', false)"
        )
    connection.commit()
    try:
        yield connection
    finally:
        connection.close()


def epoch_in(conn: Any, state: EpochState) -> int:
    """A committed backfill epoch row in ``state`` (inserted: the trigger guards UPDATEs only)."""
    with conn.cursor() as cur:
        cur.execute(
            "INSERT INTO eo.epochs (pipeline, kind, fencing_token, dag_id, run_id,"
            " state, written_at, committed_at, aborted_at)"
            " VALUES (%s, 'backfill', %s, 'd', 'r', %s, %s, %s, %s) RETURNING epoch_id",
            (PIPELINE, TOKEN, *state_row(state)),
        )
        epoch_id: int = cur.fetchone()[0]
    conn.commit()
    return epoch_id


def stored_state(conn: Any, epoch_id: int) -> str:
    with conn.cursor() as cur:
        cur.execute("SELECT state FROM eo.epochs WHERE epoch_id = %s", (epoch_id,))
        state: str = cur.fetchone()[0]
    conn.commit()
    return state


def raw_update(conn: Any, epoch_id: int, target: EpochState, *, operator_action: bool = False) -> None:
    """``UPDATE eo.epochs SET state = target`` (and its timestamps), committed; with
    ``operator_action`` the transaction marks itself one first (``eo.operator_action``)."""
    with conn.cursor() as cur:
        if operator_action:
            cur.execute("SET LOCAL eo.operator_action = 'on'")
        cur.execute(
            f"UPDATE eo.epochs SET {STATE_COLUMNS} WHERE epoch_id = %s", (*state_row(target), epoch_id)
        )
        assert cur.rowcount == 1
    conn.commit()


CHANGES = [
    (current, target) for current, target in itertools.product(EpochState, repeat=2) if current != target
]


@pytest.mark.parametrize("operator_action", [False, True], ids=["anyone", "operator"])
@pytest.mark.parametrize(("current", "target"), CHANGES)
def test_trigger_accepts_exactly_the_tables_transitions(
    conn: Any, current: EpochState, target: EpochState, operator_action: bool
) -> None:
    epoch_id = epoch_in(conn, current)
    if is_allowed(current, target, operator_action=operator_action):
        raw_update(conn, epoch_id, target, operator_action=operator_action)
        assert stored_state(conn, epoch_id) == target.value
        return
    with pytest.raises(psycopg2.errors.CheckViolation) as info:
        raw_update(conn, epoch_id, target, operator_action=operator_action)
    conn.rollback()
    if is_allowed(current, target, operator_action=True):  # an operator-only move, without one
        expected = f"epoch transition {current} -> {target} (epoch {epoch_id}) needs an operator action"
    else:
        expected = f"illegal epoch transition {current} -> {target} (epoch {epoch_id})"
    assert info.value.diag.message_primary == expected
    assert stored_state(conn, epoch_id) == current.value


def test_the_table_has_exactly_four_moves_the_trigger_accepts() -> None:
    allowed = [pair for pair in CHANGES if is_allowed(*pair, operator_action=True)]
    assert allowed == [
        (EpochState.RESERVED, EpochState.WRITTEN),
        (EpochState.RESERVED, EpochState.ABORTED),
        (EpochState.WRITTEN, EpochState.COMMITTED),
        (EpochState.WRITTEN, EpochState.ABORTED),
    ]


@pytest.mark.parametrize("state", list(EpochState))
def test_trigger_lets_a_same_state_update_through(conn: Any, state: EpochState) -> None:
    """A repeat is not a transition (the table has no self-moves): the trigger does not
    refuse it, matching the guards, for which a repeat is a no-op. Only the CHECKs apply."""
    epoch_id = epoch_in(conn, state)
    raw_update(conn, epoch_id, state)
    assert stored_state(conn, epoch_id) == state.value


class VoteAfterUpdate:
    """A real cursor that, right after the first UPDATE it runs, lets another session vote
    the epoch and commit: the row moves between the guard and the read that follows it."""

    def __init__(self, cur: Any, other: Any, epoch_id: int) -> None:
        self._cur, self._other, self._epoch_id = cur, other, epoch_id
        self._fired = False

    def execute(self, query: str, params: Any = None) -> None:
        self._cur.execute(query, params)
        if query.startswith("UPDATE") and not self._fired:
            self._fired = True
            with self._other.cursor() as cur:
                label_actor(cur, Actor("process", "the other session"))
                epoch_transitions.vote_written(cur, self._epoch_id, TOKEN, {"records": 1})
            self._other.commit()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)


def test_commit_refused_when_the_epoch_was_voted_between_guard_and_read(conn: Any, schema: str) -> None:
    epoch_id = epoch_in(conn, EpochState.RESERVED)
    other = psycopg2.connect(schema)
    try:
        with conn.cursor() as cur, pytest.raises(IllegalTransition) as info:
            commit_statements.mark_committed(VoteAfterUpdate(cur, other, epoch_id), epoch_id)
        conn.rollback()
    finally:
        other.close()
    assert str(info.value) == (
        f"epoch {epoch_id} is WRITTEN: transition WRITTEN -> COMMITTED is not allowed"
        " (another session changed the epoch meanwhile; nothing was changed, retry)"
    )
    assert stored_state(conn, epoch_id) == "WRITTEN"
