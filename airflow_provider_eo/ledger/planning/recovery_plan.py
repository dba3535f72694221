"""What recovery and a backfill run's release do with open epochs: pure planning.

Recovery (the first task of every stream run, and the ``eo_recovery`` DAG) settles the
open epochs of one pipeline, oldest first:

* WRITTEN: its data is durable in HBase, so it is re-committed (exactly a commit);
* RESERVED and owned by the run doing the recovery: kept (this run writes it);
* RESERVED and owned by a run Airflow reports live (queued or running): kept;
* RESERVED and owned by any other run: aborted (its ranges return to the next
  reservation; a late vote of its writer is fenced out).

Release (the backfill run's teardown) settles only that run's own backfill epochs:
WRITTEN is committed, RESERVED is aborted (the run is over: nothing will write it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.runs import RunIdentity, RunIsLive
from airflow_provider_eo.ledger.model.states import EpochState


class Action(StrEnum):
    """What happens to one open epoch."""

    COMMIT = "commit"
    ABORT = "abort"
    KEEP = "keep"


@dataclass(frozen=True)
class Step:
    """One open epoch, what is done with it and why (the abort reason is stored)."""

    epoch: Epoch
    action: Action
    reason: str


@dataclass(frozen=True)
class SettlementPlan:
    """Steps in epoch order; the id lists are what the operators return as XCom."""

    steps: tuple[Step, ...]

    def ids(self, action: Action) -> list[int]:
        """Ids of the epochs given ``action``, oldest first."""
        return [step.epoch.epoch_id for step in self.steps if step.action is action]


def plan_recovery(open_epochs: Sequence[Epoch], run: RunIdentity, is_live: RunIsLive) -> SettlementPlan:
    """Recovery by ``run`` of ``open_epochs`` (see the module docstring).

    ``is_live`` is asked only about RESERVED epochs of other runs.
    """
    steps = []
    for epoch in sorted(open_epochs, key=lambda e: e.epoch_id):
        owner = RunIdentity(epoch.dag_id, epoch.run_id)
        if epoch.state is EpochState.WRITTEN:
            steps.append(Step(epoch, Action.COMMIT, "WRITTEN: its data is in HBase"))
        elif run.owns(epoch):
            steps.append(Step(epoch, Action.KEEP, "RESERVED by this run"))
        elif is_live(owner):
            steps.append(Step(epoch, Action.KEEP, f"RESERVED by live run {owner}"))
        else:
            steps.append(Step(epoch, Action.ABORT, f"recovery by {run}: owning run {owner} is not live"))
    return SettlementPlan(tuple(steps))


def plan_release(open_epochs: Sequence[Epoch], run: RunIdentity) -> SettlementPlan:
    """Release of ``run``'s own epochs among ``open_epochs`` (others are left out)."""
    steps = []
    for epoch in sorted(open_epochs, key=lambda e: e.epoch_id):
        if not run.owns(epoch):
            continue
        if epoch.state is EpochState.WRITTEN:
            steps.append(Step(epoch, Action.COMMIT, "WRITTEN by this run"))
        else:
            steps.append(Step(epoch, Action.ABORT, f"backfill run {run.run_id} ended before its commit"))
    return SettlementPlan(tuple(steps))
