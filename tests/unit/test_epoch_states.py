"""The epoch state machine table: every ordered pair of states, with and without operator action.

The expected moves are written out here by hand, independently of ``states.TRANSITIONS``.
"""

from __future__ import annotations

import itertools

import pytest

from airflow_provider_eo.ledger import ALLOWED_TRANSITIONS
from airflow_provider_eo.ledger.model.refusals import IllegalTransition
from airflow_provider_eo.ledger.model.states import (
    SETTLED_STATES,
    TRANSITIONS,
    EpochState,
    check_transition,
    sources_of,
    sql_literals,
)
from airflow_provider_eo.ledger.store import retention

R, W, C, A = EpochState.RESERVED, EpochState.WRITTEN, EpochState.COMMITTED, EpochState.ABORTED

#: The protocol's moves; WRITTEN -> ABORTED additionally needs an explicit operator action.
PROTOCOL_MOVES = {(R, W), (R, A), (W, C)}
OPERATOR_MOVES = PROTOCOL_MOVES | {(W, A)}
HINTS = {
    (R, C): "the epoch has not been written yet",
    (W, A): "its data is in HBase: commit it, or abort explicitly with allow_written=True / --allow-written",
}
ALL_PAIRS = list(itertools.product(EpochState, repeat=2))


def test_every_state_has_an_entry_in_the_table() -> None:
    assert list(TRANSITIONS) == list(EpochState)
    assert {R: {W, A}, W: {C, A}, C: set(), A: set()} == ALLOWED_TRANSITIONS


@pytest.mark.parametrize("operator_action", [False, True])
@pytest.mark.parametrize(("current", "target"), ALL_PAIRS)
def test_check_transition_every_pair(current: EpochState, target: EpochState, operator_action: bool) -> None:
    allowed = OPERATOR_MOVES if operator_action else PROTOCOL_MOVES
    if (current, target) in allowed:
        check_transition(7, current, target, operator_action=operator_action)  # allowed: returns
        return
    with pytest.raises(IllegalTransition) as info:
        check_transition(7, current, target, operator_action=operator_action)
    message = f"epoch 7 is {current}: transition {current} -> {target} is not allowed"
    hint = HINTS.get((current, target))
    assert str(info.value) == (f"{message} ({hint})" if hint else message)
    assert (info.value.epoch_id, info.value.state, info.value.attempted) == (7, current.value, target.value)


@pytest.mark.parametrize(
    ("target", "operator_action", "sources"),
    [
        (R, False, []),
        (R, True, []),
        (W, False, ["RESERVED"]),
        (W, True, ["RESERVED"]),
        (C, False, ["WRITTEN"]),
        (C, True, ["WRITTEN"]),
        (A, False, ["RESERVED"]),
        (A, True, ["RESERVED", "WRITTEN"]),
    ],
)
def test_sources_of_every_target(target: EpochState, operator_action: bool, sources: list[str]) -> None:
    assert sources_of(target, operator_action=operator_action) == sources


def test_settled_states_come_from_the_table_and_reach_the_sql_as_literals() -> None:
    assert SETTLED_STATES == (EpochState.COMMITTED, EpochState.ABORTED)
    assert sql_literals(SETTLED_STATES) == "'COMMITTED', 'ABORTED'"
    assert (
        retention._MATCHING.count("state IN ('COMMITTED', 'ABORTED')") == 2
    )  # the partial index's predicate
