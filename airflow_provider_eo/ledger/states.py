"""Epoch states and kinds, and the allowed transitions of the epoch state machine.

::

    RESERVED --vote--> WRITTEN --commit--> COMMITTED
        |                  |
        +--abort--> ABORTED <--abort (explicit operator action only)--+

The ledger enforces this table with conditional UPDATEs (and a trigger in the schema).
"""

from __future__ import annotations

from enum import StrEnum


class EpochState(StrEnum):
    """Where an epoch is in the two-phase commit."""

    RESERVED = "RESERVED"
    WRITTEN = "WRITTEN"
    COMMITTED = "COMMITTED"
    ABORTED = "ABORTED"

    @property
    def is_open(self) -> bool:
        """RESERVED and WRITTEN epochs are open (they block the next stream epoch)."""
        return self in OPEN_STATES


class EpochKind(StrEnum):
    """``stream`` epochs move the cursor; ``backfill`` epochs replay explicit ranges."""

    STREAM = "stream"
    BACKFILL = "backfill"


OPEN_STATES: frozenset[EpochState] = frozenset({EpochState.RESERVED, EpochState.WRITTEN})

#: state -> states it may move to. WRITTEN -> ABORTED needs ``allow_written=True``.
ALLOWED_TRANSITIONS: dict[EpochState, frozenset[EpochState]] = {
    EpochState.RESERVED: frozenset({EpochState.WRITTEN, EpochState.ABORTED}),
    EpochState.WRITTEN: frozenset({EpochState.COMMITTED, EpochState.ABORTED}),
    EpochState.COMMITTED: frozenset(),
    EpochState.ABORTED: frozenset(),
}

#: Transitions only an explicit operator action may take.
OPERATOR_ONLY_TRANSITIONS: frozenset[tuple[EpochState, EpochState]] = frozenset(
    {(EpochState.WRITTEN, EpochState.ABORTED)}
)


def is_allowed(current: EpochState, target: EpochState, *, operator_action: bool = False) -> bool:
    """Whether ``current -> target`` is a legal transition."""
    if target not in ALLOWED_TRANSITIONS[current]:
        return False
    return operator_action or (current, target) not in OPERATOR_ONLY_TRANSITIONS
