"""Epoch states and kinds, and the ONE table of the epoch state machine.

::

    RESERVED --vote--> WRITTEN --commit--> COMMITTED
        |                  |
        +--abort--> ABORTED <--abort (explicit operator action only)--+

:data:`TRANSITIONS` is the only place the state machine is written down. The ledger's
conditional UPDATEs bind :func:`sources_of` as their guard, their refusals come from
:func:`check_transition`, and ``tests/integration/test_transition_table.py`` proves the
schema's trigger (``eo.check_epoch_transition``) accepts exactly the same moves, the
operator-only ones only in a transaction marked an operator action (``eo.operator_action``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum

from airflow_provider_eo.ledger.model.refusals import IllegalTransition


class EpochState(StrEnum):
    """Where an epoch is in the two-phase commit."""

    RESERVED = "RESERVED"
    WRITTEN = "WRITTEN"
    COMMITTED = "COMMITTED"
    ABORTED = "ABORTED"


class EpochKind(StrEnum):
    """``stream`` epochs move the cursor; ``backfill`` epochs replay explicit ranges."""

    STREAM = "stream"
    BACKFILL = "backfill"


class Authority(StrEnum):
    """Who may take a transition."""

    #: Any caller: the write/commit/recover protocol.
    ANYONE = "anyone"
    #: Only an explicit operator action (``allow_written=True`` / ``--allow-written``).
    OPERATOR = "operator"


OPEN_STATES: frozenset[EpochState] = frozenset({EpochState.RESERVED, EpochState.WRITTEN})

#: The state machine: every state -> {successor: who may move it there}. Terminal states
#: have no successors. A repeat (a state to itself) is not a transition.
TRANSITIONS: Mapping[EpochState, Mapping[EpochState, Authority]] = {
    EpochState.RESERVED: {EpochState.WRITTEN: Authority.ANYONE, EpochState.ABORTED: Authority.ANYONE},
    EpochState.WRITTEN: {EpochState.COMMITTED: Authority.ANYONE, EpochState.ABORTED: Authority.OPERATOR},
    EpochState.COMMITTED: {},
    EpochState.ABORTED: {},
}

#: States without successors: an epoch there is settled for good (what prune may delete).
SETTLED_STATES: tuple[EpochState, ...] = tuple(state for state in EpochState if not TRANSITIONS[state])


def sql_literals(states: Iterable[EpochState]) -> str:
    """``'COMMITTED', 'ABORTED'``: state names as SQL string literals, for a predicate that
    must stay literal so a partial index with the same predicate answers it. Only this
    module's own names are ever rendered (never input)."""
    return ", ".join(f"'{state.value}'" for state in states)


#: state -> states it may move to (operator-only moves included), derived from TRANSITIONS.
ALLOWED_TRANSITIONS: dict[EpochState, frozenset[EpochState]] = {
    state: frozenset(successors) for state, successors in TRANSITIONS.items()
}

#: Why a refused move is refused, where the bare "not allowed" does not say enough.
_HINTS: Mapping[tuple[EpochState, EpochState], str] = {
    (EpochState.RESERVED, EpochState.COMMITTED): "the epoch has not been written yet",
    (EpochState.WRITTEN, EpochState.ABORTED): (
        "its data is in HBase: commit it, or abort explicitly with allow_written=True / --allow-written"
    ),
}


def is_allowed(current: EpochState, target: EpochState, *, operator_action: bool = False) -> bool:
    """Whether ``current -> target`` is a transition of :data:`TRANSITIONS` that this caller
    may take (operator-only moves need ``operator_action=True``). ``current == target`` is
    never a transition."""
    actor = TRANSITIONS[current].get(target)
    return actor is Authority.ANYONE or (actor is Authority.OPERATOR and operator_action)


def sources_of(target: EpochState, *, operator_action: bool = False) -> list[str]:
    """The state names (in ``EpochState`` order) from which this caller may move an epoch
    to ``target``: what a guarded ``UPDATE ... WHERE state = ANY(%s)`` binds. Empty when
    nothing leads to ``target`` (RESERVED is only ever inserted)."""
    return [state.value for state in EpochState if is_allowed(state, target, operator_action=operator_action)]


def check_transition(
    epoch_id: int, current: EpochState, target: EpochState, *, operator_action: bool = False
) -> None:
    """Return if this caller may move epoch ``epoch_id`` from ``current`` to ``target``.

    Raises ``IllegalTransition`` otherwise (naming the epoch, both states, and a hint for
    the refusals an operator is likely to meet), including for ``current == target``:
    callers that treat a repeat as a no-op check for it first. Pure: reads no database.
    """
    if not is_allowed(current, target, operator_action=operator_action):
        raise IllegalTransition(epoch_id, current.value, target.value, _HINTS.get((current, target), ""))
