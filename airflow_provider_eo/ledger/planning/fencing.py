"""Who may write an epoch: the fencing rule shared by the start of a write and its vote.

A writer holds the fencing token it was given at reservation. It may write only while
the epoch is RESERVED under that token; an epoch already voted (WRITTEN or COMMITTED)
under the same token is a finished write (a retry does nothing). Anything else is
fenced out: the epoch was aborted (by recovery, a release or an operator), or it was
given a new token (a takeover; the tests' ``eo_devtools.ledger_direct.rotate_fencing_token``).
A writer that names the digest of the mapping it runs (config/spec_digest.py) is fenced out too
when the epoch was reserved with another one: a stale-code or stale-YAML writer never writes
or votes a range under another mapping (an epoch reserved before digests were recorded, or a
writer naming none, is not checked).
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.states import EpochState


@dataclass(frozen=True)
class WriteLease:
    """The caller may write ``epoch`` and then vote with ``fencing_token`` (and the digest of
    the mapping it runs, ``spec_digest``, checked again at the vote)."""

    epoch: Epoch
    fencing_token: str
    spec_digest: str | None = None


@dataclass(frozen=True)
class AlreadyDone:
    """``epoch`` was already voted under the caller's token: nothing is left to do."""

    epoch: Epoch


@dataclass(frozen=True)
class Fenced:
    """The caller must not write: the epoch is not RESERVED, or (``token_mismatch``) a
    newer writer holds it under another token, or (``writer_digest``) the caller runs another
    mapping than the epoch was reserved with."""

    epoch: Epoch
    token_mismatch: bool
    writer_digest: str | None = None

    @property
    def reason(self) -> str:
        """Why, in words (for logs and errors)."""
        if self.writer_digest is not None and self.epoch.spec_digest is not None:
            reserved, running = self.epoch.spec_digest[:12], self.writer_digest[:12]  # as spec_digest.SHORT
            epoch_id = self.epoch.epoch_id
            return f"epoch {epoch_id} was reserved with mapping {reserved}, this writer runs {running}"
        if self.token_mismatch:
            return "fencing token does not match the epoch's"
        return f"epoch is {self.epoch.state.value}, not RESERVED"


WritePermission = WriteLease | AlreadyDone | Fenced


def write_permission(
    epoch: Epoch, fencing_token: str | None, spec_digest: str | None = None
) -> WritePermission:
    """The fencing verdict for a writer holding ``fencing_token`` and running the mapping of
    ``spec_digest`` (None: not checked).

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
    if spec_digest is not None and epoch.spec_digest is not None and spec_digest != epoch.spec_digest:
        return Fenced(epoch, token_mismatch=False, writer_digest=spec_digest)
    return WriteLease(epoch, epoch.fencing_token, spec_digest)
