"""Who may write an epoch: the fencing rule shared by the start of a write and its vote.

A writer holds the fencing token it was given at reservation. It may write only while
the epoch is RESERVED under that token; an epoch already voted (WRITTEN or COMMITTED)
under the same token is a finished write (a retry does nothing). Anything else is
fenced out: the epoch was aborted (by recovery, a release or an operator), or it was
given a new token (a takeover; the tests' ``eo_devtools.ledger_direct.rotate_fencing_token``).
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.states import EpochState


@dataclass(frozen=True)
class WriteLease:
    """The caller may write ``epoch`` and then vote with ``fencing_token``."""

    epoch: Epoch
    fencing_token: str


@dataclass(frozen=True)
class AlreadyDone:
    """``epoch`` was already voted under the caller's token: nothing is left to do."""

    epoch: Epoch


@dataclass(frozen=True)
class Fenced:
    """The caller must not write: the epoch is not RESERVED, or (``token_mismatch``) a
    newer writer holds it under another token."""

    epoch: Epoch
    token_mismatch: bool

    @property
    def reason(self) -> str:
        """Why, in words (for logs and errors)."""
        if self.token_mismatch:
            return "fencing token does not match the epoch's"
        return f"epoch is {self.epoch.state.value}, not RESERVED"


WritePermission = WriteLease | AlreadyDone | Fenced


def write_permission(epoch: Epoch, fencing_token: str | None) -> WritePermission:
    """The fencing verdict for a writer holding ``fencing_token``.

    ``None`` stands for the epoch's current token (a write started by hand); such a
    writer can never be "already done": it did not reserve the epoch. Pure: reads
    nothing, raises nothing.
    """
    voted = epoch.state in (EpochState.WRITTEN, EpochState.COMMITTED)
    if fencing_token is not None and str(fencing_token) == epoch.fencing_token and voted:
        return AlreadyDone(epoch)
    if epoch.state is not EpochState.RESERVED:
        return Fenced(epoch, token_mismatch=False)
    if fencing_token is not None and str(fencing_token) != epoch.fencing_token:
        return Fenced(epoch, token_mismatch=True)
    return WriteLease(epoch, epoch.fencing_token)
